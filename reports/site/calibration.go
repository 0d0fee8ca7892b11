package site

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gatewitness/gatewitness/reports"
)

// Calibration is the calibration matrix (make calibrate; docs/calibration.md):
// each gatewitness test's verdict on real data planes, per configuration
// variant, as the data plane's documentation has it and, where a run
// measured it, as measured. The site shows it as calibration.html.
type Calibration struct {
	// Tests are the rows, in order.
	Tests []string `json:"tests"`
	// Variants are the columns: one data plane in one configuration.
	Variants []CalibrationVariant `json:"variants"`
}

// CalibrationVariant is one column of the matrix.
type CalibrationVariant struct {
	DataPlane string `json:"dataPlane"`
	Name      string `json:"name"`
	About     string `json:"about"`
	// Cells are the tests the variant runs; a test it does not run has no
	// cell.
	Cells []CalibrationCell `json:"cells"`
}

// CalibrationCell is one test on one variant.
type CalibrationCell struct {
	Test     string         `json:"test"`
	Expected reports.Result `json:"expected"`
	// Measured is the verdict of the run that wrote the matrix; empty
	// when none ran.
	Measured reports.Result `json:"measured,omitempty"`
	// Why is the directive or documented behaviour that decides the
	// expected verdict, and Doc where it is documented.
	Why string `json:"why"`
	Doc string `json:"doc,omitempty"`
}

// ReadCalibration reads a matrix written as JSON (make calibrate writes
// out/calibration/matrix.json).
func ReadCalibration(path string) (*Calibration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("calibration matrix: %w", err)
	}
	var c Calibration
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("calibration matrix %s: %w", path, err)
	}
	if len(c.Tests) == 0 || len(c.Variants) == 0 {
		return nil, fmt.Errorf("calibration matrix %s: no tests or no variants", path)
	}
	return &c, nil
}

// calibrationPage is the data of calibration.html.
type calibrationPage struct {
	frame
	DataPlanes []calibrationGroup
	Variants   []CalibrationVariant
	Rows       []calibrationRow
}

type calibrationGroup struct {
	Name string
	Span int
}

type calibrationRow struct {
	Test  string
	Cells []*CalibrationCell // nil: the variant does not run the test
}

// Agrees reports whether the measured verdict, if any, is the expected one.
func (c *CalibrationCell) Agrees() bool { return c.Measured == "" || c.Measured == c.Expected }

func (b *builder) calibrationPage(c *Calibration) calibrationPage {
	p := calibrationPage{frame: frame{SiteTitle: b.opts.Title, Title: "Calibration on real data planes"}, Variants: c.Variants}
	for _, v := range c.Variants {
		if n := len(p.DataPlanes); n > 0 && p.DataPlanes[n-1].Name == v.DataPlane {
			p.DataPlanes[n-1].Span++
			continue
		}
		p.DataPlanes = append(p.DataPlanes, calibrationGroup{Name: v.DataPlane, Span: 1})
	}
	for _, t := range c.Tests {
		r := calibrationRow{Test: t}
		for vi := range c.Variants {
			var cell *CalibrationCell
			for ci := range c.Variants[vi].Cells {
				if c.Variants[vi].Cells[ci].Test == t {
					cell = &c.Variants[vi].Cells[ci]
				}
			}
			r.Cells = append(r.Cells, cell)
		}
		p.Rows = append(p.Rows, r)
	}
	return p
}
