//go:build !linux && !windows && !darwin

package nativedialog

import "context"

func open(context.Context, Options) (string, error) { return "", ErrUnavailable }

func available() bool { return false }
