// Package inputerr is the one error type the library returns for a
// problem with what the user gave (a setting, a folder, a file that cannot
// be read or parsed), as opposed to a failure of the run itself. The
// packages that return it name it InputError (run.InputError,
// compare.InputError, inferencex.InputError are this type), so a caller
// tells every one of them apart with a single errors.As: a CLI exits 2 on
// it.
package inputerr

import "errors"

// Error is a problem with the user's input; its message is Err's.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Wrap returns err as an *Error: nil stays nil, and an error that already
// holds an *Error is returned as it is.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	var ie *Error
	if errors.As(err, &ie) {
		return err
	}
	return &Error{Err: err}
}

// Is reports whether err holds an *Error.
func Is(err error) bool {
	var ie *Error
	return errors.As(err, &ie)
}
