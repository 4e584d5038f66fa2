#if canImport(Glibc)
import Glibc
#endif

/// hcigatt — a Bluetooth LE host over raw HCI.
/// Exit codes: 0 ok, 1 runtime error (including malformed input), 2 usage error.
let commands: [Command] = [
    ScanCommand.command, InfoCommand.command, ListCommand.command, CmdCommand.command,
    GATTDumpCommand.command, ReadCommand.command, WriteCommand.command, SubscribeCommand.command, RecordsCommand.command,
    ReplayCommand.command, DecodeCommand.command, ServeCommand.command, AskCommand.command, PairCommand.command, BondsCommand.command, UnpairCommand.command,
    L2CAPCommand.command, ChatCommand.command, GatewayCommand.command, ProxyCommand.command,
] + HealthMonitors.all.map(\.command)

struct Command: Sendable {
    var name: String
    var summary: String
    var help: String
    var spec: Arguments.Spec
    var run: @Sendable (Arguments) async throws -> Int32
}

func usage() -> String {
    var s = """
    hcigatt \(version) — Bluetooth LE host over raw HCI, for Linux

    Usage: hcigatt [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]
           (global options, e.g. --transport SPEC or --bond-dir DIR, go before or after COMMAND)

    Commands:

    """
    for c in commands {
        s += "  \(c.name.padding(12))\(c.summary)\n"
    }
    s += """
      help COMMAND  Show the options of COMMAND
      version       Print the version

    Exit codes: 0 success, 1 runtime error, 2 usage error.
    Run `hcigatt help COMMAND` for details.
    """
    return s
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}

/// Global options given before the command (`hcigatt --transport tcp:… scan`, as with
/// `git -C`): the controller and pairing options, with their values, by name. They go
/// after the command's own arguments, where its parser takes them like any other; a command
/// that has no use for one (`decode` and `--transport`) ignores it, so a shell alias with
/// them works for every command.
func leadingGlobalOptions(_ args: inout ArraySlice<String>) throws(UsageError) -> [(name: String, tokens: [String])] {
    var taken: [(name: String, tokens: [String])] = []
    while let a = args.first, a.hasPrefix("--"), a != "--", a != "--help", a != "--version" {
        let name = a.dropFirst(2).split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
        if ControllerOptions.flags.contains(name) {
            taken.append((name, [a]))
            args = args.dropFirst()
        } else if ControllerOptions.options.contains(name) {
            args = args.dropFirst()
            if a.contains("=") {
                taken.append((name, [a]))
            } else {
                guard let value = args.first else { throw UsageError("option --\(name) needs a value") }
                taken.append((name, [a, value]))
                args = args.dropFirst()
            }
        } else {
            throw UsageError("unknown global option --\(name) (before the command go only --transport, --snoop, --bond-dir and the other controller and pairing options)")
        }
    }
    return taken
}

func runMain() async -> Int32 {
    var args = CommandLine.arguments.dropFirst()
    let globals: [(name: String, tokens: [String])]
    do { globals = try leadingGlobalOptions(&args) } catch {
        Console.err("hcigatt: \(error.message)\nRun `hcigatt --help` for the list of commands.")
        return 2
    }
    guard let first = args.first else {
        Console.err(globals.isEmpty ? usage() : "hcigatt: options but no command\n\n\(usage())")
        return 2
    }
    args = args.dropFirst()
    switch first {
    case "-h", "--help":
        Console.out(usage())
        return 0
    case "help":
        guard let topic = args.first else {
            Console.out(usage())
            return 0
        }
        guard let c = commands.first(where: { $0.name == topic }) else {
            Console.err("hcigatt: no such command '\(topic)'\n\n\(usage())")
            return 2
        }
        Console.out(c.help)
        return 0
    case "version", "--version":
        Console.out("hcigatt \(version)")
        return 0
    default:
        guard let c = commands.first(where: { $0.name == first }) else {
            Console.err("hcigatt: unknown command '\(first)'. Run `hcigatt --help` for the list.")
            return 2
        }
        if args.contains("--help") || args.contains("-h") {
            Console.out(c.help)
            return 0
        }
        let spec = c.spec
        args += globals.filter { spec.flags.contains($0.name) || spec.options.contains($0.name) }.flatMap(\.tokens)
        do {
            let parsed = try Arguments(args, spec: c.spec)
            return try await c.run(parsed)
        } catch let e as UsageError {
            Console.err("hcigatt \(c.name): \(e.message)\nRun `hcigatt help \(c.name)` for usage.")
            return 2
        } catch let e as RuntimeError {
            Console.err("hcigatt \(c.name): \(e.message)")
            return 1
        } catch {
            Console.err("hcigatt \(c.name): \(error)")
            return 1
        }
    }
}

// A closed stdout (`hcigatt subscribe … | head -2`) is an EPIPE to handle, not a death by
// SIGPIPE with the device's CCCDs still set.
signal(SIGPIPE, SIG_IGN)
let status = await runMain()
Console.flush()
exit(status)
