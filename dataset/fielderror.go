package dataset

// FieldError is a problem with one field of the options or the source
// given to Open, Locate or Select. Field names the field as a Go
// expression ("Source.InputFile", "SelectOptions.MaxContextLength",
// "Options.CacheDir"), so a caller can say it in its own terms (the CLI
// names the flag that sets it); Err says what is wrong. Match it with
// errors.As; Unwrap gives Err.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "Field: Err".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }
