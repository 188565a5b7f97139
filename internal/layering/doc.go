// Package layering holds no code: its test checks the import rules that give the tree its
// floors (ARCHITECTURE.md, "Layout" and "Boundaries worth keeping"), so that an arrow running
// back up a floor fails CI instead of being found in a review.
//
// The floors, lowest first; a package may import its own floor and those below it:
//
//  1. engine/session: the session type, standard library only.
//  2. internal/…: small utilities (atomicfile, settings, textual) that name no feature.
//  3. filter, content: the shared words (the filter language, body kinds and decoding). content
//     does not import filter.
//  4. rootca, platform/…, engine/…, store/…: the core. The engine and the store do not import
//     each other (the store sees only sessions), nor platform, nor the features above. Inside
//     the engine, the rooms under engine/internal/ (conn, upstream, capture, frames, ws, …) sit
//     below its public API: of the engine they import only engine/session and each other.
//  5. contract, diff, codegen, redact: features over sessions and the store.
//  6. ui/…: the window. It imports no engine/internal/…, no platform/… and no hook package
//     under engine/hooks/ (the window speaks in its own terms through interfaces it declares).
//  7. cmd/inspector: the composition root, the only package that sees every floor.
//
// fyne.io/… is imported only by ui/…, cmd/… and assets, tests included, so the core builds
// and tests with CGO_ENABLED=0.
package layering
