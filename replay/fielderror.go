package replay

// FieldError is a problem with one Config field. Field names the field
// as a Go expression ("Config.URL", "Config.ExtraInputs"), so a caller
// can say it in its own terms (the CLI names the flag that sets it); Err
// says what is wrong. Match it with errors.As; Unwrap gives Err.
type FieldError struct {
	Field string
	Err   error
}

// Error returns "Field: Err".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// fieldErr returns a *FieldError for Config.field.
func fieldErr(field string, err error) error { return &FieldError{Field: "Config." + field, Err: err} }
