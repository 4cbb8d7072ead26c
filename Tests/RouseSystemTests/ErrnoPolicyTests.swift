import Glibc
import RouseSystem
import Synchronization
import Testing

/// Signals the EINTR test's handler saw.
private let interruptions = Atomic<Int>(0)

/// `Sys`'s one errno policy (written in `Syscalls.swift`), each rule shown on a real system call.
@Suite("Sys errno policy", .timeLimit(.minutes(1)), .serialized)
struct ErrnoPolicyTests {
    /// EINTR is retried inside the wrapper: a read interrupted by a signal (a handler without `SA_RESTART`, so the
    /// kernel does return EINTR) goes on waiting and returns the byte that comes later; the caller never sees EINTR.
    @Test func aReadInterruptedByASignalIsRetried() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        var previous = sigaction()
        sigaction(SIGUSR2, &action, &previous)
        defer { sigaction(SIGUSR2, &previous, nil) }
        let (readEnd, writeEnd) = try Sys.pipe()
        defer {
            Sys.close(readEnd)
            Sys.close(writeEnd)
        }
        let tid = Atomic<Int32>(0)
        let result = Mutex<Result<Int, SystemError>?>(nil)
        let reader = try Sys.startJoinableThread(name: "test-eintr", stackSize: 1 << 20) {
            // The thread inherits its creator's mask, and the test runner's threads block signals.
            var usr2 = sigset_t()
            sigemptyset(&usr2)
            sigaddset(&usr2, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &usr2, nil)
            // "/proc/thread-self" links to "PID/task/TID".
            let tidText = Sys.readLink("/proc/thread-self")?.split(separator: "/").last.map(String.init) ?? ""
            tid.store(Int32(tidText) ?? -1, ordering: .releasing)
            var byte: UInt8 = 0
            let outcome = Result<Int, SystemError> { () throws(SystemError) -> Int in
                try withUnsafeMutableBytes(of: &byte) { raw throws(SystemError) in try Sys.read(readEnd, into: raw) }
            }
            result.withLock { $0 = outcome }
        }
        let before = interruptions.load(ordering: .relaxed)
        try waitUntilAsleep(tid)
        pthread_kill(reader, SIGUSR2)
        // The handler ran and the thread went back to sleep in the same read.
        for _ in 0..<10_000_000 where interruptions.load(ordering: .relaxed) == before { sched_yield() }
        try waitUntilAsleep(tid)
        var one: UInt8 = 7
        _ = withUnsafeBytes(of: &one) { raw in Glibc.write(writeEnd, raw.baseAddress, 1) }
        Sys.joinThread(reader)
        #expect(interruptions.load(ordering: .relaxed) == before + 1)
        let outcome = try #require(result.withLock { $0 })
        #expect(try outcome.get() == 1)
    }

    /// EAGAIN on a non-blocking descriptor is a value (`.wouldBlock`), not an error.
    @Test func wouldBlockIsAValue() throws {
        let fd = try Sys.socket(family: AF_UNIX, type: Int32(SOCK_DGRAM.rawValue))
        defer { Sys.close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let outcome = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try Sys.recv(fd, raw) }
        #expect(outcome == .wouldBlock)
    }

    /// Absence where absence is the answer is a value: ENOENT from reading, stating and removing a file that is not
    /// there; a `/proc` entry of a process that does not exist.
    @Test func absenceIsAValue() throws {
        let path = "/nonexistent-rouse-\(getpid())/file"
        #expect(try Sys.readFile(path) == nil)
        #expect(try Sys.status(path) == nil)
        #expect(try Sys.remove(path) == false)
        #expect(Sys.readText("/proc/999999999/stat") == nil)
        #expect(Sys.environment("ROUSE_SURELY_UNSET_\(getpid())") == nil)
    }

    /// EBADF is thrown, never a trap: a descriptor another thread closed must end that thread's loop, not the process.
    @Test func aBadDescriptorIsThrown() {
        // Far above any descriptor this process can hold (RLIMIT_NOFILE), so it cannot be one another test opened.
        let bad: Int32 = 1 << 30
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(throws: SystemError.self) {
            _ = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try Sys.read(bad, into: raw) }
        }
        do {
            _ = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try Sys.recv(bad, raw) }
            Issue.record("recv on a bad descriptor returned")
        } catch let error as SystemError {
            #expect(error.code == .badFileDescriptor)
            #expect(error.call == "recv")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// Any other failure a peer or the kernel causes is thrown with its call and errno: a connect nobody accepts.
    @Test func otherFailuresAreThrownWithTheirCall() throws {
        let path = "/tmp/rouse-errno-\(getpid()).sock"
        do {
            _ = try Sys.connect(unixPath: path)
            Issue.record("connect to a missing socket succeeded")
        } catch {
            #expect(error.code == .noSuchFileOrDirectory)
            #expect(error.call == "connect")
        }
    }

    /// Waits until thread `tid` of this process sleeps in the kernel (state `S` in its `/proc` stat): an event the
    /// kernel reports, not a guess at how long it takes.
    private func waitUntilAsleep(_ tid: borrowing Atomic<Int32>) throws {
        for _ in 0..<10_000_000 {
            let id = tid.load(ordering: .acquiring)
            if id > 0, let stat = Sys.readText("/proc/self/task/\(id)/stat"),
                let close = stat.lastIndex(of: ")"),
                stat[stat.index(close, offsetBy: 2)] == "S"
            {
                return
            }
            sched_yield()
        }
        Issue.record("the reader never went to sleep")
    }
}
