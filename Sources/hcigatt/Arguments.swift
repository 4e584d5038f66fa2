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

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func option(_ name: String) -> String? { options[name]?.last }
    func all(_ name: String) -> [String] { options[name] ?? [] }
}

/// A mistake in how the command was called: printed with a hint, exit code 2.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// A failure while doing the work: printed on stderr, exit code 1.
struct RuntimeError: Error {
    var message: String
    /// The library error behind the message, for decisions (is it link loss?) that must not
    /// depend on the wording.
    var cause: (any Error)?
    init(_ message: String, cause: (any Error)? = nil) {
        self.message = message
        self.cause = cause
    }
}
