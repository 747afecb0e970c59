package web

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestFramesAsContracted holds docs/contracts.md's table of frames to the
// frames this package sends and the page script reads: the same types, the
// same JSON fields, and a case in static/app.js for each frame the server
// sends unasked (the probe's answer needs none: any frame proves the socket
// alive). A frame type or field added or renamed on one side alone fails
// here.
func TestFramesAsContracted(t *testing.T) {
	doc, err := os.ReadFile("../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^ *\\| `(\\{\"t\":\"([a-z]+)\"[^`]*\\})` \\|")
	field := regexp.MustCompile(`"([a-z]+)":`)
	documented := map[string]bool{}
	docFields := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[2]] = true
		for _, f := range field.FindAllStringSubmatch(m[1], -1) {
			docFields[f[1]] = true
		}
	}
	if len(documented) == 0 {
		t.Fatal("docs/contracts.md has no table of frames")
	}

	sent := map[string]bool{frameProbe: true}
	for _, typ := range frameTypes {
		sent[typ] = true
	}
	if d, s := contractKeys(documented), contractKeys(sent); !reflect.DeepEqual(d, s) {
		t.Errorf("frame types: docs/contracts.md lists %v, the server sends %v", d, s)
	}

	wire := map[string]bool{}
	ft := reflect.TypeOf(wireFrame{})
	for i := 0; i < ft.NumField(); i++ {
		name, _, _ := strings.Cut(ft.Field(i).Tag.Get("json"), ",")
		wire[name] = true
	}
	if d, w := contractKeys(docFields), contractKeys(wire); !reflect.DeepEqual(d, w) {
		t.Errorf("frame fields: docs/contracts.md shows %v, wireFrame has %v", d, w)
	}

	js, err := os.ReadFile("../static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	handled := map[string]bool{}
	// A frame is handled in onFrame's switch, or before it by its type
	// (a reset, which must not first count as the connection live).
	for _, m := range regexp.MustCompile(`case '([a-z]+)':|f\.t === '([a-z]+)'`).FindAllStringSubmatch(string(js), -1) {
		handled[m[1]+m[2]] = true
	}
	for typ := range handled {
		if !documented[typ] {
			t.Errorf("static/app.js handles a %q frame that docs/contracts.md does not list", typ)
		}
	}
	for typ := range documented {
		if typ != frameProbe && !handled[typ] {
			t.Errorf("docs/contracts.md lists a %q frame that static/app.js does not handle", typ)
		}
	}
}

func contractKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
