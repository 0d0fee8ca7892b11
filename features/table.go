package features

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Table writes every registered feature to w as an aligned text table, one
// feature a row, sorted by name: name, channel, level, GEP, profiles and
// dependencies. It is what `gatewitness features` prints.
func Table(w io.Writer) error { return writeTable(w, All()) }

func writeTable(w io.Writer, fs []Feature) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCHANNEL\tLEVEL\tGEP\tPROFILES\tDEPENDS ON")
	for _, f := range fs {
		gep := "-"
		if f.GEP > 0 {
			gep = strconv.Itoa(f.GEP)
		}
		deps := make([]string, len(f.DependsOn))
		for i, d := range f.DependsOn {
			deps[i] = string(d)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, f.Channel, f.Level, gep, orDash(f.Profiles), orDash(deps))
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
