package content

import (
	"bufio"
	"bytes"
	"encoding/hex"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func hexDumpAll(b []byte) string { return hex.Dump(b) }
