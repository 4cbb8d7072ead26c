import FoundationEssentials
import RouseText

/// The agent unit's command line (`ExecStart=` of `rouse-agent.service`), as `rouse agent enroll` reads it and
/// writes it back into a drop-in with the gateway it enrolled with. Pure: text in, text out.
struct AgentServiceCommandLine: Equatable {
    /// The `ExecStart=` prefixes (`-`, `@`, `+`, `!`, `:`), kept as they were.
    var prefix: String
    /// The executable, then its arguments.
    var words: [String]

    /// The last non-empty `ExecStart=` of the `[Service]` section of `unit`, or nil.
    init?(unit: String) {
        var section = ""
        var found: String?
        for raw in unit.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingBlanks()
            if line.hasPrefix("[") {
                section = line
                continue
            }
            guard section == "[Service]", line.hasPrefix("ExecStart=") else { continue }
            let value = String(line.dropFirst("ExecStart=".count)).trimmingBlanks()
            found = value.isEmpty ? nil : value
        }
        guard let found else { return nil }
        self.init(execStart: found)
    }

    /// Splits an `ExecStart=` value: whitespace separates words, double quotes group them (`\"` and `\\`
    /// inside).
    init?(execStart: String) {
        var text = Substring(execStart)
        var prefix = ""
        while let first = text.first, "-@+!:".contains(first) {
            prefix.append(first)
            text = text.dropFirst()
        }
        var words: [String] = []
        var current = ""
        var inWord = false
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
                inWord = true
            } else if character.isWhitespace && !quoted {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if quoted { return nil }
        if inWord { words.append(current) }
        guard !words.isEmpty else { return nil }
        self.prefix = prefix
        self.words = words
    }

    init(prefix: String = "", words: [String]) {
        self.prefix = prefix
        self.words = words
    }

    /// The value of `--option VALUE` or `--option=VALUE`, the last one given.
    func value(of option: String) -> String? {
        var result: String?
        var index = 1
        while index < words.count {
            if words[index] == option, index + 1 < words.count {
                result = words[index + 1]
                index += 2
                continue
            }
            if words[index].hasPrefix(option + "=") { result = String(words[index].dropFirst(option.count + 1)) }
            index += 1
        }
        return result
    }

    /// Removes every `--option VALUE` and `--option=VALUE`.
    mutating func remove(_ option: String) {
        var kept = [words[0]]
        var index = 1
        while index < words.count {
            if words[index] == option {
                index += 2
                continue
            }
            if !words[index].hasPrefix(option + "=") { kept.append(words[index]) }
            index += 1
        }
        words = kept
    }

    /// Replaces `--option` (every occurrence) with one `--option value` at the end.
    mutating func set(_ option: String, _ value: String) {
        remove(option)
        words += [option, value]
    }

    /// The `ExecStart=` value: words with whitespace, quotes, backslashes, `$` or `%` quoted and escaped.
    var execStart: String {
        prefix
            + words.map { word in
                let plain = !word.isEmpty && !word.contains { $0.isWhitespace || "\"\\'$%;".contains($0) }
                if plain { return word }
                let escaped = word.replacingAll("\\", with: "\\\\")
                    .replacingAll("\"", with: "\\\"").replacingAll("%", with: "%%")
                    .replacingAll("$", with: "$$")
                return "\"" + escaped + "\""
            }.joined(separator: " ")
    }
}
