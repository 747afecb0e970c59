// Package static holds the page assets (scripts and styles), embedded in the
// binary and served at content-hashed URLs so that browsers may cache them
// forever and still pick up a new build at once.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed *.js *.css
var files embed.FS

// contentTypes are the types the assets are served as, by extension, set
// here rather than taken from mime.TypeByExtension: that reads the host's
// MIME table (/etc/mime.types where no shared-mime-info database is
// installed), which may map .js or .css to another type, and with
// X-Content-Type-Options: nosniff a browser then runs no script and applies
// no stylesheet (TestContentTypesFixed). An extension embedded above must
// be listed: init panics on one that is not.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// Prefix is the URL path under which assets are served.
const Prefix = "/static/"

// Asset is one embedded file.
type Asset struct {
	Name        string // file name as in the source tree, e.g. app.js
	Hashed      string // content-hashed name, e.g. app.3f2a9c41.js
	ContentType string
	Body        []byte
}

var (
	byName   = map[string]*Asset{}
	byHashed = map[string]*Asset{}
)

func init() {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic("static: read embedded files: " + err.Error())
	}
	for _, e := range entries {
		body, err := files.ReadFile(e.Name())
		if err != nil {
			panic("static: read " + e.Name() + ": " + err.Error())
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(e.Name())
		a := &Asset{
			Name:        e.Name(),
			Hashed:      strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:])[:10] + ext,
			ContentType: contentTypes[ext],
			Body:        body,
		}
		if a.ContentType == "" {
			panic("static: no content type for " + e.Name())
		}
		byName[a.Name] = a
		byHashed[a.Hashed] = a
	}
}

// Path returns the hashed URL path of the asset called name (e.g. "app.js" →
// "/static/app.3f2a9c41d0.js"). It panics on an unknown name: a template that
// names a missing asset is a programming error that every page test catches.
func Path(name string) string {
	a, ok := byName[name]
	if !ok {
		panic("static: no asset " + name)
	}
	return Prefix + a.Hashed
}

// Lookup returns the asset served at the hashed file name (without Prefix).
func Lookup(hashed string) (*Asset, bool) {
	a, ok := byHashed[hashed]
	return a, ok
}

// names returns the source names of all assets, sorted.
func names() []string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
