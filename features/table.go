package features

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Table writes the features fs (every registered feature when nil) to w as
// an aligned text table, one feature a row: name, whose feature it is
// (upstream's or gatewitness's), channel, level and GEP. It is what
// `gatewitness features` prints; WideTable adds the profiles and
// dependencies.
func Table(w io.Writer, fs []Feature) error { return writeTable(w, orAll(fs), false) }

// WideTable writes Table's columns plus each feature's profiles and the
// features it depends on (`gatewitness features -o wide`).
func WideTable(w io.Writer, fs []Feature) error { return writeTable(w, orAll(fs), true) }

// JSON writes the features fs (every registered feature when nil) as a
// JSON array with every field (`gatewitness features -o json`).
func JSON(w io.Writer, fs []Feature) error {
	type feature struct {
		Name        string   `json:"name"`
		Upstream    bool     `json:"upstream"`
		Channel     string   `json:"channel"`
		Level       string   `json:"level"`
		GEP         int      `json:"gep,omitempty"`
		Profiles    []string `json:"profiles"`
		DependsOn   []string `json:"dependsOn"`
		Description string   `json:"description,omitempty"`
	}
	out := []feature{}
	for _, f := range orAll(fs) {
		deps := []string{}
		for _, d := range f.DependsOn {
			deps = append(deps, string(d))
		}
		profiles := append([]string{}, f.Profiles...)
		out = append(out, feature{string(f.Name), f.Upstream, string(f.Channel), string(f.Level), f.GEP, profiles, deps, f.Description})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("features: writing JSON: %w", err)
	}
	return nil
}

func orAll(fs []Feature) []Feature {
	if fs == nil {
		return All()
	}
	return fs
}

func writeTable(w io.Writer, fs []Feature, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "NAME\tFROM\tCHANNEL\tLEVEL\tGEP"
	if wide {
		header += "\tPROFILES\tDEPENDS ON"
	}
	fmt.Fprintln(tw, header)
	for _, f := range fs {
		gep := "-"
		if f.GEP > 0 {
			gep = strconv.Itoa(f.GEP)
		}
		from := "gatewitness"
		if f.Upstream {
			from = "upstream"
		}
		level := string(f.Level)
		if f.Level == LevelImplementationSpecific {
			level = "impl-specific"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", f.Name, from, f.Channel, level, gep)
		if wide {
			deps := make([]string, len(f.DependsOn))
			for i, d := range f.DependsOn {
				deps[i] = string(d)
			}
			fmt.Fprintf(tw, "\t%s\t%s", orDash(f.Profiles), orDash(deps))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("features: writing the table: %w", err)
	}
	return nil
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
