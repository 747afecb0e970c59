package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Row is one figure of the table.
type Row struct {
	Bench  string // "throughput", "latency", ...
	Metric string
	Value  string
	Target string // "" when the row has no target
	Met    *bool  // nil when the row has no target
}

// Verdict is the row's target column.
func (r Row) Verdict() string {
	switch {
	case r.Met == nil:
		return ""
	case *r.Met:
		return "met"
	default:
		return "**missed**"
	}
}

func verdict(ok bool) *bool { return &ok }

// Machine describes where the table was made.
type Machine struct {
	Cores   int
	CPU     string
	Go      string
	OS      string
	Redis   string
	Date    time.Time
	Command string
	// Load is /proc/loadavg's 1-minute figure before and after the run:
	// the machine is shared, and a load above the core count means the
	// figures are pessimistic.
	LoadStart, LoadEnd string
}

// LoadAvg returns the 1-, 5- and 15-minute load averages.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// ThisMachine describes the running machine; redisVersion and command are
// filled in by the caller.
func ThisMachine() Machine {
	return Machine{
		Cores:     runtime.NumCPU(),
		CPU:       cpuModel(),
		Go:        runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		Date:      time.Now().UTC(),
		LoadStart: LoadAvg(),
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// WriteTable writes the machine line and the rows as a Markdown table.
func WriteTable(w io.Writer, m Machine, rows []Row) {
	fmt.Fprintf(w, "Machine: %d cores (%s), %s, %s, %s; %s. Load average (1, 5, 15 min) %s at the start, %s at the end (shared machine).\n\n",
		m.Cores, m.CPU, m.OS, m.Go, m.Redis, m.Date.Format("2006-01-02 15:04 MST"), m.LoadStart, m.LoadEnd)
	fmt.Fprintln(w, "| bench | metric | value | target | |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.Bench, r.Metric, r.Value, r.Target, r.Verdict())
	}
}

// Markers around the generated part of a Markdown file.
const (
	DocBegin = "<!-- feedbench:begin -->"
	DocEnd   = "<!-- feedbench:end -->"
)

// WriteDoc writes the command and the table between the markers of the
// Markdown file at path, keeping what is outside them; a file without the
// markers (or no file) gets a new document.
func WriteDoc(path, command string, table []byte) error {
	var gen strings.Builder
	fmt.Fprintln(&gen, DocBegin)
	fmt.Fprintf(&gen, "Produced by:\n\n```\n%s\n```\n\n", command)
	gen.Write(table)
	gen.WriteString(DocEnd)
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("bench: %w", err)
	}
	s := string(old)
	i, j := strings.Index(s, DocBegin), strings.Index(s, DocEnd)
	var doc string
	if i >= 0 && j > i {
		doc = s[:i] + gen.String() + s[j+len(DocEnd):]
	} else {
		doc = "# Benchmarks\n\n" + gen.String() + "\n"
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
