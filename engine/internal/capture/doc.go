// Package capture records HTTP bodies while they stream through the engine: a Body tees
// what is read from it into a buffer capped per body (Options.Limit) and across all
// bodies (Budget), and the bytes beyond go to a spill file (Options.SpillDir) up to a
// limit, beyond which they are only counted and the body is marked truncated.
//
// Contract:
//   - A Body never changes, delays or fails the stream: Read returns what the source
//     returned. Capture problems (memory spent, a spill file that cannot be written)
//     only shorten what is kept.
//   - One goroutine reads; Result, Snapshot, WaitFirst, FailedEmpty and ReleaseBudget may
//     be called from others at the same time.
//   - Result closes the spill file; the session.Body it returns names it in Spilled and
//     the caller (the store) owns the file from then on.
//   - ReleaseBudget gives the buffer's memory back to the Budget once the session left
//     the engine; the buffer stops growing after it.
package capture
