package opscli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	gql "github.com/flowsnap/flowsnap/clients/genqlient"
)

// field is one column of a list of runs: its name on the command line, its
// name in the API (the key of json output), and how a table and csv show it.
type field struct {
	name, api string
	text      func(r *gql.OpsRun, f timeFormat) string
}

// timeFormat writes an instant: relative to now in a table, RFC 3339 with
// milliseconds (the API's spelling) in csv.
type timeFormat struct {
	now      time.Time
	relative bool
}

func (f timeFormat) at(t *time.Time) string {
	if t == nil {
		return ""
	}
	if !f.relative {
		return t.UTC().Format(rfc3339ms)
	}
	return ago(f.now, *t)
}

const rfc3339ms = "2006-01-02T15:04:05.000Z07:00"

// ago is t relative to now: "12s ago", "5m ago", "3h ago", "2d ago", or "in
// 5m" for a future instant.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	suffix, prefix := " ago", ""
	if d < 0 {
		d, suffix, prefix = -d, "", "in "
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	return prefix + s + suffix
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fields are every column a list can show, in the order json output
// writes them.
var fields = []field{
	{"id", "id", func(r *gql.OpsRun, _ timeFormat) string { return r.Id }},
	{"status", "status", func(r *gql.OpsRun, _ timeFormat) string { return string(r.Status) }},
	{"flow", "flowName", func(r *gql.OpsRun, _ timeFormat) string { return r.FlowName }},
	{"created", "createdAt", func(r *gql.OpsRun, f timeFormat) string { return f.at(&r.CreatedAt) }},
	{"started", "startedAt", func(r *gql.OpsRun, f timeFormat) string { return f.at(r.StartedAt) }},
	{"finished", "finishedAt", func(r *gql.OpsRun, f timeFormat) string { return f.at(r.FinishedAt) }},
	{"heartbeat", "heartbeatAt", func(r *gql.OpsRun, f timeFormat) string { return f.at(r.HeartbeatAt) }},
	{"waiting", "waiting", func(r *gql.OpsRun, f timeFormat) string {
		if r.Waiting == nil {
			return ""
		}
		s := strings.ToLower(string(r.Waiting.Kind))
		if r.Waiting.Reason != s {
			s += ":" + r.Waiting.Reason
		}
		if r.Waiting.WakeAt != nil {
			s += " (wakes " + f.at(r.Waiting.WakeAt) + ")"
		}
		return s
	}},
	{"parent", "parentRunId", func(r *gql.OpsRun, _ timeFormat) string { return str(r.ParentRunId) }},
	{"lineage", "lineageId", func(r *gql.OpsRun, _ timeFormat) string { return r.LineageId }},
	{"round", "roundOrdinal", func(r *gql.OpsRun, _ timeFormat) string { return strconv.FormatInt(r.RoundOrdinal, 10) }},
	{"owner", "owner", func(r *gql.OpsRun, _ timeFormat) string {
		if r.Owner == nil {
			return ""
		}
		return fmt.Sprintf("%s/%d", r.Owner.HostId, r.Owner.Pid)
	}},
	{"cancel-requested", "cancellation", func(r *gql.OpsRun, f timeFormat) string { return f.at(r.Cancellation.RequestedAt) }},
	{"revision", "revision", func(r *gql.OpsRun, _ timeFormat) string { return strconv.FormatInt(r.Revision, 10) }},
}

// defaultFields are the columns of a table or csv without --fields.
var defaultFields = []string{"id", "status", "flow", "created", "finished", "waiting", "parent"}

func fieldNames() string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ",")
}

// pickFields reads --fields: names as the command line or the API spells
// them. Without it, json shows every field and a table or csv the default
// columns.
func pickFields(list []string, format string) ([]field, error) {
	if len(list) == 0 {
		if format == "json" || format == "ndjson" {
			return fields, nil
		}
		list = defaultFields
	}
	var out []field
	for _, name := range list {
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == name || f.api == name })
		if i < 0 {
			return nil, usagef("--fields: no field %q (fields: %s)", name, fieldNames())
		}
		out = append(out, fields[i])
	}
	return out, nil
}

// runWriter writes runs in one format, as they come, page by page.
type runWriter struct {
	w      io.Writer
	format string
	fields []field
	times  timeFormat
	n      int
	tab    *tabwriter.Writer
	csv    *csv.Writer
}

func newRunWriter(w io.Writer, format string, fs []field, times timeFormat) *runWriter {
	rw := &runWriter{w: w, format: format, fields: fs, times: times}
	switch format {
	case "table":
		rw.tab = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		rw.row(func(f field) string { return strings.ToUpper(f.name) })
	case "csv":
		rw.csv = csv.NewWriter(w)
		rw.row(func(f field) string { return f.name })
	case "json":
		io.WriteString(w, "[")
	}
	return rw
}

func (rw *runWriter) row(cell func(f field) string) {
	cells := make([]string, len(rw.fields))
	for i, f := range rw.fields {
		cells[i] = cell(f)
	}
	if rw.csv != nil {
		_ = rw.csv.Write(cells) // errors surface at Flush
		return
	}
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(rw.tab, strings.Join(cells, "\t"))
}

// add writes one run: typed for a table or csv, raw (the API's own JSON of
// the run) for json and ndjson.
func (rw *runWriter) add(r *gql.OpsRun, raw json.RawMessage) error {
	switch rw.format {
	case "table", "csv":
		rw.row(func(f field) string { return f.text(r, rw.times) })
	default:
		obj, err := pickJSON(raw, rw.fields)
		if err != nil {
			return err
		}
		sep := "\n"
		if rw.format == "json" {
			sep = "\n  "
			if rw.n > 0 {
				sep = ",\n  "
			}
		}
		if rw.format == "ndjson" {
			sep = ""
			obj = append(obj, '\n')
		}
		io.WriteString(rw.w, sep)
		rw.w.Write(obj)
	}
	rw.n++
	return nil
}

// close ends the output: the table's alignment, the array's bracket.
func (rw *runWriter) close() error {
	switch rw.format {
	case "table":
		return rw.tab.Flush()
	case "csv":
		rw.csv.Flush()
		return rw.csv.Error()
	case "json":
		end := "]\n"
		if rw.n > 0 {
			end = "\n]\n"
		}
		_, err := io.WriteString(rw.w, end)
		return err
	}
	return nil
}

// pickJSON writes the members of raw (a run as the API spelled it) that fs
// name, in their order.
func pickJSON(raw json.RawMessage, fs []field) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("reading a run of the response: %w", err)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.api)
		b.Write(k)
		b.WriteByte(':')
		v, ok := members[f.api]
		if !ok {
			v = json.RawMessage("null")
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
