// The tests spawn programs through RouseChildProcess (`ChildProcess`, `RunningChild`, `LineReader`), shared with
// rouse-bench; re-exported so that `import RouseTestSupport` keeps giving them to every test target.
@_exported import RouseChildProcess
