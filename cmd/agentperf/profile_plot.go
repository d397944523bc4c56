package main

import (
	"fmt"

	"github.com/agentperf/agentperf/metrics/htmlreport"
)

// writeHTMLReport writes report.html into an artifact directory; the error
// says what failed and where.
func writeHTMLReport(dir string) ([]string, error) {
	w, err := htmlreport.WriteDir(dir)
	if err != nil {
		return w, fmt.Errorf("writing %s failed: %w", htmlreport.FileName, err)
	}
	return w, nil
}
