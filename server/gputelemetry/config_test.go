package gputelemetry

import (
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		c       Choice
		want    Settings
		wantErr string
	}{
		{"default: probe the DCGM ports", Choice{}, Settings{Probe: DefaultURLs}, ""},
		{"flag alone", Choice{Given: true}, Settings{Probe: DefaultURLs}, ""},
		{"URLs completed", Choice{Given: true, Values: []string{"localhost:9500", "http://h:1/m dashboard"}},
			Settings{URLs: []string{"http://localhost:9500/metrics", "http://h:1/m"}, Probe: DefaultURLs}, ""},
		{"environment", Choice{Env: "http://localhost:9400/metrics"}, Settings{URLs: []string{"http://localhost:9400/metrics"}, Probe: DefaultURLs}, ""},
		{"--no-gpu-telemetry wins over the environment", Choice{Off: true, Env: "http://x:1/metrics"}, Settings{Off: true}, ""},
		{"preset off", Choice{PresetOff: true}, Settings{Off: true}, ""},
		{"preset off, the flag given", Choice{PresetOff: true, Given: true, Values: []string{"x:1"}}, Settings{URLs: []string{"http://x:1/metrics"}, Probe: DefaultURLs}, ""},
		{"preset off, the environment given", Choice{PresetOff: true, Env: "x:1"}, Settings{URLs: []string{"http://x:1/metrics"}, Probe: DefaultURLs}, ""},
		{"both flags", Choice{Off: true, Given: true}, Settings{}, "contradict"},
		{"pynvml", Choice{Given: true, Values: []string{"pynvml"}}, Settings{}, "not the local driver"},
		{"csv", Choice{Given: true, Values: []string{"custom.csv"}}, Settings{}, "CSV"},
		{"bad scheme", Choice{Given: true, Values: []string{"ftp://x/metrics"}}, Settings{}, "exporter URL"},
	} {
		got, err := Resolve(tc.c)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Resolve = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
