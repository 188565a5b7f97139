package nativedialog

import "context"

func open(ctx context.Context, o Options) (string, error) {
	p, err := osascript.run(ctx, o)
	if err != nil {
		return "", err
	}
	return cleanDir(p), nil
}

func available() bool { return osascript.usable() }
