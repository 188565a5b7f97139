package main

import (
	"context"
	"errors"
)

func profileRuns(ctx context.Context, o options, e *env, benchDir string) error {
	return errors.New("-profile: not built yet")
}
