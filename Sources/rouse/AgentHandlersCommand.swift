import ArgumentParser
import FoundationEssentials
import RouseAgent
import RouseSystem

extension AgentCommand {
    /// `rouse agent handlers add|check`: handler files (`/etc/rouse/handlers.d/NAME.toml`) written and checked with
    /// the agent's own parser, so a file that passes here is one the agent loads.
    struct Handlers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "handlers",
            abstract: "Write and check handler files.", subcommands: [Add.self, Check.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Write a handler file (checked with the agent's parser before it is written).",
                discussion: """
                    --command takes the rest of the line: the executable (an absolute path) and its arguments, e.g.
                    rouse agent handlers add phone --topic com.example.phone --command /usr/bin/phone-handler --mode voip
                    A running agent loads the file on reload: systemctl reload rouse-agent.
                    """)

            @Argument(help: "The handler's name (the file's stem): letters, digits, '.', '_', '-'.") var name: String
            @Option(help: "The bundle ID it takes pushes for (VoIP pushes come on <topic>.voip).") var topic: String
            @Option(help: "A push type it takes: voip, background or alert (repeat; default voip and background).")
            var pushType: [String] = []
            @Option(help: "The user it runs as.") var user: String?
            @Option(help: "The group it runs as (default: the user's primary group).") var group: String?
            @Option(help: "The handler directory.") var directory = "/etc/rouse/handlers.d"
            @Flag(help: "Replace an existing file.") var force = false
            @Option(parsing: .remaining, help: "The executable (absolute path) and its arguments; must come last.")
            var command: [String] = []

            func validate() throws {
                guard !name.isEmpty, !name.hasPrefix("."),
                    name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
                else { throw ValidationError("'\(name)' is not a handler name (letters, digits, '.', '_', '-')") }
                guard !command.isEmpty else { throw ValidationError("--command PATH [ARGS…] is required (last)") }
            }

            func run() async throws {
                let path = directory + "/" + name + ".toml"
                if FileManager.default.fileExists(atPath: path) && !force {
                    throw ValidationError("\(path) exists (--force replaces it)")
                }
                let text = HandlerFileText.make(
                    topic: topic, command: command, pushTypes: pushType, user: user, group: group)
                let parsed: HandlerConfiguration
                do {
                    parsed = try HandlerConfiguration.parse(text, name: name, file: path)
                } catch {
                    throw ValidationError(error.detail)
                }
                if !FileManager.default.isExecutableFile(atPath: command[0]) {
                    Sys.writeStandardError("warning: \(command[0]) is not an executable file (yet)\n")
                }
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
                print("wrote \(path): handler \(name), topics \(parsed.topics.joined(separator: ", "))")
                // A directory in the home directory is a per-user agent's (rouse agent enroll --user).
                let home = ProcessInfo.processInfo.environment["HOME"].map { $0 + "/" } ?? "\u{0}"
                let manager = directory.hasPrefix(home) && home != "/" ? "systemctl --user" : "systemctl"
                print("a running agent loads it on reload: \(manager) reload rouse-agent")
            }
        }

        struct Check: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "check",
                abstract: "Check handler files with the agent's parser (exit 1 if any is wrong).")

            @Argument(help: "Handler files (NAME.toml) or directories of them.") var paths: [String] = [
                "/etc/rouse/handlers.d"
            ]

            func run() async throws {
                var failed = false
                for file in try Self.files(paths) {
                    let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
                    do {
                        let text = try String(contentsOfFile: file, encoding: .utf8)
                        let handler = try HandlerConfiguration.parse(text, name: name, file: file)
                        print("\(file): ok: handler \(handler.name), topics \(handler.topics.joined(separator: ", "))")
                    } catch let error as AgentError {
                        failed = true
                        print(error.detail)
                    } catch {
                        failed = true
                        print("\(file): \(error)")
                    }
                }
                if failed { throw ExitCode(1) }
            }

            /// The files named, and the `*.toml` files of the directories named (the ones the agent loads).
            static func files(_ paths: [String]) throws -> [String] {
                var result: [String] = []
                for path in paths {
                    guard let status = (try? Sys.status(path)) ?? nil else {
                        throw ValidationError("\(path): no such file or directory")
                    }
                    if status.isDirectory {
                        result += try FileManager.default.contentsOfDirectory(atPath: path)
                            .filter { $0.hasSuffix(".toml") }.sorted().map { path + "/" + $0 }
                    } else {
                        result.append(path)
                    }
                }
                return result
            }
        }
    }
}

/// The text of a handler file, commented, in the TOML subset the agent reads.
enum HandlerFileText {
    static func make(topic: String, command: [String], pushTypes: [String], user: String?, group: String?) -> String {
        var lines = [
            "# Written by `rouse agent handlers add`; checked by `rouse agent handlers check`. Keys: docs/agent.md.",
            "# The bundle ID: VoIP pushes come on \(topic).voip, the others on \(topic).",
            "topic = \(quoted(topic))",
            "# The executable (absolute path) and its arguments; no shell.",
            "command = [" + command.map(quoted).joined(separator: ", ") + "]",
        ]
        if !pushTypes.isEmpty {
            lines.append("push-types = [" + pushTypes.map(quoted).joined(separator: ", ") + "]")
        } else {
            lines.append("push-types = [\"voip\", \"background\"]")
        }
        if let user { lines.append("user = \(quoted(user))") }
        if let group { lines.append("group = \(quoted(group))") }
        lines.append("# [limits] (iOS's defaults): voip-deadline-seconds = 5, strikes = 3, background-seconds = 30, …")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A TOML basic string (`\"`, `\\`, `\n`, `\t` escaped: the escapes the agent's parser reads).
    static func quoted(_ text: String) -> String {
        var result = "\""
        for character in text {
            switch character {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            default: result.append(character)
            }
        }
        return result + "\""
    }
}
