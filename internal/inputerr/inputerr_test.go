package inputerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestWrap(t *testing.T) {
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	base := errors.New("--x: bad")
	w := Wrap(base)
	if !Is(w) || w.Error() != "--x: bad" || !errors.Is(w, base) {
		t.Errorf("Wrap(%v) = %v (Is %v)", base, w, Is(w))
	}
	outer := fmt.Errorf("point 3: %w", w)
	if Wrap(outer) != outer || !Is(outer) {
		t.Error("an error holding an *Error is wrapped again")
	}
	if Is(base) {
		t.Error("a plain error is an input error")
	}
}
