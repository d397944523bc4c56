package numfmt

import (
	"math"
	"testing"
)

func TestThousands(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {-1000, "-1,000"}, {12345, "12,345"},
		{123456, "123,456"}, {1234567, "1,234,567"}, {-999, "-999"}, {-123456, "-123,456"},
		{math.MaxInt64, "9,223,372,036,854,775,807"}, {math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		if got := Thousands(c.n); got != c.want {
			t.Errorf("Thousands(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Thousands(int(2_000_000)); got != "2,000,000" {
		t.Errorf("Thousands(int) = %q", got)
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {20 << 20, "20.0 MiB"},
		{3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}, {1 << 50, "1.0 PiB"}, {2 << 60, "2.0 EiB"}, {math.MaxInt64, "8.0 EiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
