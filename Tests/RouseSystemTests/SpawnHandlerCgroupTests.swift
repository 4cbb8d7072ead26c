import Foundation
import Glibc
import RouseSystem
import Testing

/// A handler is in its cgroups before any of its code runs (`rouse_spawn_handler`: the forked child writes itself
/// into each `cgroup.procs` the agent opened, then execs), and a child that cannot join never runs: nothing of a
/// handler escapes its cgroup, not even for the moment between fork and a later move by the parent.
@Suite("spawnHandler: the child joins its cgroups before it runs")
struct SpawnHandlerCgroupTests {
    static func temporary() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-spawn-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A `cgroup.procs` descriptor the child cannot write (opened read-only): the child exits 126 before exec, so
    /// the program (which would create a marker file) never runs. Were the join done by the parent after the fork,
    /// or skipped on failure, the marker would be there.
    @Test func aChildThatCannotJoinItsCgroupNeverRuns() throws {
        let directory = try Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let marker = directory + "/ran"
        // Any file will do to make the write fail; a real cgroup.procs where there is one.
        let target =
            FileManager.default.fileExists(atPath: "/sys/fs/cgroup/cgroup.procs")
            ? "/sys/fs/cgroup/cgroup.procs" : directory + "/procs"
        if !FileManager.default.fileExists(atPath: target) {
            _ = FileManager.default.createFile(atPath: target, contents: nil)
        }
        let readOnly = try Sys.open(target, O_RDONLY)
        defer { Sys.close(readOnly) }
        let spawned = try Sys.spawnHandler(
            path: "/bin/sh", arguments: ["sh", "-c", "echo ran > '\(marker)'"], environment: ["PATH=/bin:/usr/bin"],
            channel: -1, output: -1, cgroupProcs: [readOnly], identity: nil)
        let status = Sys.wait(pidfd: spawned.pidfd)
        Sys.close(spawned.pidfd)
        #expect(status == 126, "exit status \(status)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the program ran though it could not join")
    }

    /// With a real cgroup (v2 where writable, else a v1 hierarchy's), the exec'd program and the child it forks at
    /// once are in it: the program prints its own `/proc/self/cgroup` and its child's.
    @Test func theProgramAndWhatItForksAtOnceAreInTheCgroup() throws {
        let directory = try Self.temporary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let roots = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup", "/sys/fs/cgroup/memory"]
        guard let root = roots.first(where: { FileManager.default.isWritableFile(atPath: $0 + "/cgroup.procs") })
        else {
            Issue.record("no writable cgroup hierarchy here (tried \(roots))")
            return
        }
        let name = "rouse-spawn-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let group = root + "/" + name
        try Sys.makeDirectory(group, mode: 0o755)
        defer {
            for pid in (Sys.readText(group + "/cgroup.procs") ?? "").split(separator: "\n").compactMap({ Int32($0) }) {
                kill(pid, SIGKILL)
            }
            for _ in 0..<100 where !(Sys.readText(group + "/cgroup.procs") ?? "").isEmpty { usleep(2000) }
            Sys.removeDirectory(group)
        }
        let procs = try Sys.open(group + "/cgroup.procs", O_WRONLY)
        let output = directory + "/out"
        let script =
            "cat /proc/self/cgroup > '\(output).1'; (cat /proc/self/cgroup > '\(output).2'); "
            + "mv '\(output).1' '\(output)'"
        let spawned = try Sys.spawnHandler(
            path: "/bin/sh", arguments: ["sh", "-c", script], environment: ["PATH=/bin:/usr/bin"], channel: -1,
            output: -1, cgroupProcs: [procs], identity: nil)
        Sys.close(procs)
        let status = Sys.wait(pidfd: spawned.pidfd)
        Sys.close(spawned.pidfd)
        #expect(status == 0)
        for file in [output, output + ".2"] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            #expect(text.contains("/" + name + "\n"), "\(file): \(text)")
        }
    }
}
