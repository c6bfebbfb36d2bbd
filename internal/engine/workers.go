package engine

import "fmt"

// Workers maps job kinds to their handlers: the registry an application builds (hopper.Workers
// is this type) and that every worker runs from, the engine's executor and the remote worker
// alike. Build it before it is used; it is not safe to change while a worker runs it.
type Workers struct {
	handlers map[string]Handler
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{handlers: map[string]Handler{}} }

// Add registers h for kind. It panics when the kind is empty or registered twice: both are
// programming errors found at start-up.
func (ws *Workers) Add(kind string, h Handler, what any) {
	if kind == "" {
		panic(fmt.Sprintf("hopper: %T.Kind() is empty", what))
	}
	if _, dup := ws.handlers[kind]; dup {
		panic(fmt.Sprintf("hopper: a worker for kind %q is already registered", kind))
	}
	ws.handlers[kind] = h
}

// Handler is the handler of kind, if one is registered. A nil registry has none.
func (ws *Workers) Handler(kind string) (Handler, bool) {
	if ws == nil {
		return nil, false
	}
	h, ok := ws.handlers[kind]
	return h, ok
}

// Kinds are the registered kinds, in no order.
func (ws *Workers) Kinds() []string {
	if ws == nil {
		return nil
	}
	kinds := make([]string, 0, len(ws.handlers))
	for k := range ws.handlers {
		kinds = append(kinds, k)
	}
	return kinds
}

// Len is how many kinds are registered.
func (ws *Workers) Len() int {
	if ws == nil {
		return 0
	}
	return len(ws.handlers)
}
