package site

import (
	"encoding/json"
	"fmt"
)

// Badge is a shields.io endpoint badge (https://shields.io/badges/endpoint-badge):
// a JSON file that shields.io turns into a badge image, for a README.
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
	// CacheSeconds asks shields.io to keep the badge this long: the
	// results change once a night.
	CacheSeconds int `json:"cacheSeconds,omitempty"`
}

// badgeOf is the badge of a series' latest run: its counts, red when a
// test failed, green when tests passed and none failed.
func badgeOf(s *series) Badge {
	run := s.latest().Run
	passed, failed, skipped := run.Counts()
	b := Badge{SchemaVersion: 1, Label: "gatewitness " + s.Label, CacheSeconds: 3600}
	switch {
	case failed > 0:
		b.Message = fmt.Sprintf("%d failed, %d passed", failed, passed)
		b.Color = "red"
	case passed > 0:
		b.Message = fmt.Sprintf("%d passed", passed)
		b.Color = "brightgreen"
	default:
		b.Message = fmt.Sprintf("nothing passed (%d skipped)", skipped)
		b.Color = "lightgrey"
	}
	return b
}

func (b Badge) encode() ([]byte, error) {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding a badge: %w", err)
	}
	return append(data, '\n'), nil
}
