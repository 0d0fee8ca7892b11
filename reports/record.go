package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxRunJSON bounds the size of a run record ReadRunJSON accepts.
const MaxRunJSON = 64 << 20

// runJSONLimit is MaxRunJSON; tests lower it.
var runJSONLimit = MaxRunJSON

// WriteRunJSON writes run as the run record, run.json: indented JSON of
// the Run, every field kept, so that WriteAll can write every report again
// from it.
func WriteRunJSON(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	rec := *run
	if rec.Schema == "" {
		rec.Schema = RunSchema
	}
	data, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: encoding the run record: %w", err)
	}
	data = append(data, '\n')
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("reports: writing the run record: %w", err)
	}
	return nil
}

// recordKeys are the keys WriteRunJSON always writes: a record without one
// of them is not whole.
var recordKeys = []string{"implementation", "mode", "started", "duration", "target", "environment", "claims", "tests"}

// ReadRunJSON reads a run record written by WriteRunJSON. It accepts
// records of schema RunSchema and fields it does not know (a newer
// gatewitness may add some); it refuses an empty or truncated record (one
// without a key WriteRunJSON always writes), a record of another schema,
// one larger than MaxRunJSON, and one that does not validate.
func ReadRunJSON(r io.Reader) (*Run, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(runJSONLimit)+1))
	if err != nil {
		return nil, fmt.Errorf("reports: reading the run record: %w", err)
	}
	if len(data) > runJSONLimit {
		return nil, fmt.Errorf("reports: the run record is larger than %d bytes", runJSONLimit)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("reports: the run record is empty; want the run.json gatewitness run writes")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("reports: decoding the run record (truncated, or not a run record?): %w", err)
	}
	var run Run
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&run); err != nil {
		return nil, fmt.Errorf("reports: decoding the run record: %w", err)
	}
	if run.Schema != RunSchema {
		return nil, fmt.Errorf("reports: the run record's schema is %q; this gatewitness reads %q", run.Schema, RunSchema)
	}
	if err := run.Validate(); err != nil {
		return nil, err
	}
	var missing []string
	for _, key := range recordKeys {
		if _, ok := fields[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("reports: the run record is truncated: it has no %s, which every record gatewitness run writes has", strings.Join(missing, ", "))
	}
	return &run, nil
}
