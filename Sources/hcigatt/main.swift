#if canImport(Glibc)
import Glibc
#endif

/// hcigatt — a Bluetooth LE host over raw HCI.
/// Exit codes: 0 ok, 1 runtime error (including malformed input), 2 usage error.
let commands: [Command] = [
    ScanCommand.command, InfoCommand.command, ListCommand.command, CmdCommand.command,
    GATTDumpCommand.command, ReadCommand.command, WriteCommand.command, SubscribeCommand.command,
    ReplayCommand.command, DecodeCommand.command, ServeCommand.command, AskCommand.command, PairCommand.command, BondsCommand.command, UnpairCommand.command,
] + Scenarios.all.map(\.command)

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

    Usage: hcigatt COMMAND [OPTIONS] [ARGS]

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

func runMain() async -> Int32 {
    var args = CommandLine.arguments.dropFirst()
    guard let first = args.first else {
        Console.err(usage())
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

let status = await runMain()
Console.flush()
exit(status)
