package ui

// The ui tests drive the built-in path dialog: a desktop with a portal (or Windows, macOS)
// must not pop up real dialogs under them. nativefiles_test.go turns it on where it tests it.
func init() { useNativeDialogs = false }
