import HCIGATTGateway

/// A small command-line parser: subcommand words, `--flag`, `--option VALUE` / `--option=VALUE`,
/// and positional arguments. Unknown options are usage errors (exit code 2), never ignored.
struct Arguments {
    private(set) var positional: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    struct Spec {
        var flags: Set<String>
        var options: Set<String>
    }

    init(_ args: ArraySlice<String>, spec: Spec) throws(UsageError) {
        var i = args.startIndex
        var onlyPositional = false
        while i < args.endIndex {
            let a = args[i]
            i += 1
            if onlyPositional || !a.hasPrefix("--") || a == "-" {
                positional.append(a)
                continue
            }
            if a == "--" { onlyPositional = true; continue }
            var name = String(a.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if spec.flags.contains(name) {
                if inlineValue != nil { throw UsageError("option --\(name) takes no value") }
                flags.insert(name)
            } else if spec.options.contains(name) {
                let value: String
                if let v = inlineValue {
                    value = v
                } else {
                    guard i < args.endIndex else { throw UsageError("option --\(name) needs a value") }
                    value = args[i]
                    i += 1
                }
                options[name, default: []].append(value)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    /// These arguments over `defaults` (a config file's): a single-valued option given here
    /// wins, a repeatable one has both lists (the file's first), flags are either's.
    func merged(over defaults: Arguments) -> Arguments {
        var m = self
        for (name, values) in defaults.options { m.options[name] = values + (options[name] ?? []) }
        m.flags.formUnion(defaults.flags)
        return m
    }

    /// Options from a file: one per line, `name value`, `name=value` or `--name value`, a
    /// flag by its name alone; blank lines and `#` comments skipped. Errors name the line.
    static func configFile(_ path: String, spec: Spec) throws -> Arguments {
        guard let bytes = readWholeFile(path) else { throw UsageError("--config: cannot read \(path)") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw UsageError("--config: \(path) is not UTF-8 text") }
        var tokens: [String] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(raw)
            while let c = line.first, c == " " || c == "\t" { line = line.dropFirst() }
            while let c = line.last, c == " " || c == "\t" || c == "\r" { line = line.dropLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("--") { line = line.dropFirst(2) }
            let split = line.firstIndex(where: { $0 == " " || $0 == "=" || $0 == "\t" })
            let name = String(split.map { line[..<$0] } ?? line)
            if name == "config" { throw UsageError("\(path) line \(n + 1): a config file cannot name another") }
            if spec.flags.contains(name) {
                guard split == nil else { throw UsageError("\(path) line \(n + 1): \(name) takes no value") }
                tokens.append("--\(name)")
            } else if spec.options.contains(name) {
                guard let split else { throw UsageError("\(path) line \(n + 1): \(name) needs a value") }
                var value = line[line.index(after: split)...]
                while let c = value.first, c == " " || c == "\t" || c == "=" { value = value.dropFirst() }
                tokens.append("--\(name)=\(value)")
            } else {
                throw UsageError("\(path) line \(n + 1): unknown option '\(name)'")
            }
        }
        return try Arguments(tokens[...], spec: spec)
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func option(_ name: String) -> String? { options[name]?.last }
    func all(_ name: String) -> [String] { options[name] ?? [] }

    /// The same without the options in `names` (a command that gives an option a meaning of
    /// its own before the shared parsers read the rest).
    func removing(_ names: Set<String>) -> Arguments {
        var a = self
        for n in names { a.options[n] = nil }
        return a
    }
}

/// A mistake in how the command was called: printed with a hint, exit code 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// A failure while doing the work: printed on stderr, exit code 1.
struct RuntimeError: Error, CustomStringConvertible {
    var message: String
    /// The library error behind the message, for decisions (is it link loss?) that must not
    /// depend on the wording.
    var cause: (any Error)?
    init(_ message: String, cause: (any Error)? = nil) {
        self.message = message
        self.cause = cause
    }

    var description: String { message }
}
