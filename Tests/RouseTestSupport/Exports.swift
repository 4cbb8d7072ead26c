// The seeded generator tests replay their sequences from (`SplitMix64`) is RouseAgentCore's, the one the agent's
// backoff jitter and the benchmarks use.
@_exported import RouseAgentCore
// The tests spawn programs through RouseChildProcess (`ChildProcess`, `RunningChild`, `LineReader`), shared with
// rouse-bench; re-exported so that `import RouseTestSupport` keeps giving them to every test target.
@_exported import RouseChildProcess
