package main

import "inspector/engine"

// hook is one of the composition root's traffic hooks: it puts its stages on the engine.
type hook interface{ Install(*engine.Engine) }

// installHooks is the one place that says in which order the hooks that change traffic
// run on each stage (as mitmproxy's default_addons list does). Hooks of a stage run in
// the order they were installed:
//
//  1. rules (map remote and local, auto-respond, header edits, throttles): the request as
//     the user's rules make it;
//  2. breakpoints: a paused request shows what the rules made of it, and a pause waits
//     after every hook of its stage has returned, so edits made while paused are final;
//  3. scripts (their request and response handlers also run on the body stages, after
//     every header-stage hook, so they always see what the rules made);
//  4. the network profile: latency and bandwidth shaping last, over what will be sent.
//
// Call it once, before the engine serves.
func installHooks(eng *engine.Engine, hooks ...hook) {
	for _, h := range hooks {
		h.Install(eng)
	}
}
