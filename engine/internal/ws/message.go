package ws

import (
	"context"

	"inspector/engine/session"
)

// Message is one whole WebSocket data message as a hook sees it. It is the engine's
// WebSocketMessage, field for field (the engine converts one into the other; the
// compiler refuses the conversion when they differ): see there for what each field
// means to a hook.
type Message struct {
	Session    session.ID
	URL        string
	FromClient bool
	Opcode     int
	Data       []byte
	Drop       bool
}

// Hook is what the relay needs of a message hook: the engine's MessageHook, seen
// through Message.
type Hook interface {
	OnMessage(ctx context.Context, m *Message) error
}
