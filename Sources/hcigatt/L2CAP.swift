import BluetoothLE
import BluetoothHost
import BluetoothWire
import Glibc
import HCIGATTFormat
import Synchronization

/// `hcigatt l2cap listen|connect`: netcat over an LE credit-based channel. Each stdin line
/// is one SDU, each SDU received one line on stdout.
enum L2CAPCommand {
    static let flags: Set<String> = ["hex"]
    static let options: Set<String> = ["mtu", "mps", "credits", "name", "linger", "security"]

    static var command: Command {
        Command(
            name: "l2cap", summary: "Send and receive SDUs on an LE credit-based L2CAP channel (like netcat)",
            help: """
            Usage: hcigatt l2cap listen PSM [--name N] [OPTIONS]
                   hcigatt l2cap connect ADDR|NAME PSM [OPTIONS]

            An LE credit-based connection-oriented channel (Core Vol 3 Part A §4.22): listen
            advertises (connectable, as N) and accepts channels to PSM; connect opens one to
            the device. Each line on stdin is sent as one SDU (to every open channel when
            listening); each SDU received is printed as one line. The peer gets credits as
            the lines are printed, so a slow reader slows the sender. PSM: 0x80-0xFF (or
            128-255) for applications; a fixed one (0x01-0x7F) to talk to a profile.
            listen runs until Ctrl-C; connect ends at end of stdin (after --linger seconds
            for answers) or when the peer closes the channel.

            Options:
              --hex                  stdin lines are hex bytes, SDUs are printed in hex
              --mtu N                largest SDU this side takes (23-65535, default 512)
              --mps N                largest K-frame this side takes (23-65533, default 247)
              --credits N            K-frames the peer may send ahead (default: two SDUs' worth)
              --name N               listen: the name advertised (default hcigatt)
              --security LEVEL       listen: encrypted or authenticated links only
              --linger S             connect: after end of stdin, wait S seconds for answers
                                     (default 1)
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(flags), options: PeerOptions.options.union(options)),
            run: { args in try await run(args) })
    }

    static func psm(_ text: String) throws -> UInt16 {
        let v: UInt16? = text.hasPrefix("0x") || text.hasPrefix("0X") ? UInt16(text.dropFirst(2), radix: 16) : UInt16(text)
        guard let v, (0x0001 ... 0x00FF).contains(v) else {
            throw UsageError("PSM takes 0x0001-0x00FF (applications: 0x0080-0x00FF), not '\(text)'")
        }
        return v
    }

    static func parameters(_ args: Arguments) throws -> L2CAPChannelParameters {
        func number(_ name: String, _ range: ClosedRange<Int>) throws -> UInt16? {
            guard let t = args.option(name) else { return nil }
            guard let n = Int(t), range.contains(n) else { throw UsageError("--\(name) takes \(range.lowerBound)-\(range.upperBound), not '\(t)'") }
            return UInt16(n)
        }
        let mtu = try number("mtu", 23 ... 65535) ?? 512
        let mps = try number("mps", 23 ... 65533) ?? 247
        return L2CAPChannelParameters(mtu: mtu, mps: mps, credits: try number("credits", 1 ... 65535))
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        if let t = args.option("transport"), t.hasPrefix("l2cap:") {
            throw UsageError("l2cap needs an HCI transport: with \(t) the kernel owns L2CAP")
        }
        guard let mode = args.positional.first else { throw UsageError("expected listen PSM or connect ADDR PSM") }
        let hex = args.flag("hex")
        let parameters = try parameters(args)
        switch mode {
        case "listen":
            guard args.positional.count == 2 else { throw UsageError("expected listen PSM") }
            if args.option("linger") != nil { throw UsageError("--linger goes with connect") }
            try PeerOptions.refuseCentralOptions(args, goWith: "connect")
            let security: L2CAPChannelSecurity
            switch args.option("security") {
            case nil: security = .none
            case "encrypted": security = .encryption
            case "authenticated": security = .authentication
            case let other?: throw UsageError("--security takes encrypted or authenticated, not '\(other)'")
            }
            let name = args.option("name") ?? "hcigatt"
            guard !name.isEmpty, name.utf8.count <= 248 else { throw UsageError("--name takes 1-248 bytes of UTF-8") }
            return try await listen(ControllerSettings(args), psm: try psm(args.positional[1]), parameters: parameters, hex: hex,
                                    security: security, name: name)
        case "connect":
            guard args.positional.count == 3 else { throw UsageError("expected connect ADDR|NAME PSM") }
            if args.option("name") != nil || args.option("security") != nil { throw UsageError("--name and --security go with listen") }
            let linger = try ControllerOptions.seconds(args, "linger", default: 1, range: 0 ... 3600)
            return try await connect(PeerCommandSettings(args), target: try DeviceTarget(argument: args.positional[1]), psm: try psm(args.positional[2]),
                                     parameters: parameters, hex: hex, linger: linger)
        default:
            throw UsageError("expected listen or connect, not '\(mode)'")
        }
    }

    /// One stdin line as an SDU (UTF-8, or hex bytes with --hex); nil for a bad hex line.
    static func sdu(_ line: String, hex: Bool) -> [UInt8]? {
        guard hex else { return Array(line.utf8) }
        if case .success(let b) = Hex.parse(line) { return b }
        return nil
    }

    static func printSDU(_ sdu: [UInt8], hex: Bool) {
        Console.out(hex ? Hex.string(sdu) : String(decoding: sdu, as: UTF8.self))
        Console.flushOut()
    }

    /// Prints what a channel receives until it closes; then says why.
    static func receive(_ channel: L2CAPChannel, hex: Bool) async {
        for await sdu in channel.sdus { printSDU(sdu, hex: hex) }
        Console.err("channel with \(channel.connection.address) closed: \(channel.end?.description ?? "closed")")
    }

    static func listen(_ settings: ControllerSettings, psm: UInt16, parameters: L2CAPChannelParameters, hex: Bool,
                       security: L2CAPChannelSecurity, name: String) async throws -> Int32 {
        let controller = try await LocalController.open(settings)
        let host = controller.host
        let channels = OpenChannels()
        let incoming = host.listenL2CAP(psm: psm, parameters: parameters, security: security)
        let (adv, scan) = ServeCommand.advertisingPayload(name: name, services: [], appearance: 0)
        var failure: (any Error)?
        do {
            _ = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await link in host.incomingConnections {
                            Console.err("connected: \(link.address)")
                            _ = link  // the channel request follows on the link
                        }
                        if !Task.isCancelled { throw RuntimeError("the controller went away: \(host.terminationReason?.message ?? "the host stopped")") }
                    }
                    group.addTask {
                        await withTaskGroup(of: Void.self) { each in
                            for await channel in incoming {
                                channels.add(channel)
                                Console.err("channel from \(channel.connection.address): PSM 0x\(Hex.pad(psm, 4)), their MTU \(channel.peerMTU)")
                                each.addTask {
                                    await receive(channel, hex: hex)
                                    channels.remove(channel)
                                }
                            }
                        }
                    }
                    group.addTask {
                        for await line in AnswerSource.stdinLines() {
                            guard let sdu = sdu(line, hex: hex) else { Console.err("not hex, not sent: \(line)"); continue }
                            let open = channels.all
                            if open.isEmpty { Console.err("no channel open; not sent: \(line)") }
                            for c in open {
                                do throws(HostError) { try await c.send(sdu) } catch { Console.err("not sent to \(c.connection.address): \(error.message)") }
                            }
                        }
                        // End of stdin (or none, </dev/null): keep listening until Ctrl-C.
                        let (never, open) = AsyncStream<Void>.makeStream()
                        for await _ in never {}  // ends when the task is cancelled
                        withExtendedLifetime(open) {}
                    }
                    // A controller without a public address advertises from a random static one.
                    let own: LEAddress
                    do throws(BluetoothError) {
                        let chosen = try host.advertisingAddress(.automatic)
                        own = chosen.address
                        do throws(HostError) {
                            _ = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: adv, scanResponseData: scan, ownAddress: chosen.own))
                        } catch {
                            throw BluetoothError(.unavailable, "cannot advertise: \(error.message)")
                        }
                    } catch {
                        throw RuntimeError(error.message)
                    }
                    Console.err("listening on PSM 0x\(Hex.pad(psm, 4)) as \"\(name)\" (\(own))")
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            failure = error
        }
        host.stopListeningL2CAP(psm: psm)
        for c in channels.all { await c.close() }
        await host.stopAdvertising()
        try await controller.close()
        if let failure { throw failure }
        return 0
    }

    static func connect(_ settings: PeerCommandSettings, target: DeviceTarget, psm: UInt16, parameters: L2CAPChannelParameters,
                        hex: Bool, linger: Duration) async throws -> Int32 {
        try await withPeer(settings, target) { p in
            guard let link = p.connection else { throw RuntimeError("no link") }
            let channel: L2CAPChannel
            do throws(HostError) {
                channel = try await link.openL2CAPChannel(psm: psm, parameters: parameters)
            } catch {
                throw RuntimeError("cannot open a channel to PSM 0x\(Hex.pad(psm, 4)): \(error.message)", cause: error)
            }
            Console.err("channel open: PSM 0x\(Hex.pad(psm, 4)), their MTU \(channel.peerMTU), ours \(parameters.mtu)")
            let sending = Counter()
            _ = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await receive(channel, hex: hex) }
                    group.addTask {
                        for await line in AnswerSource.stdinLines() {
                            guard let sdu = sdu(line, hex: hex) else { Console.err("not hex, not sent: \(line)"); continue }
                            sending.add(1)
                            do throws(HostError) { try await channel.send(sdu) } catch {
                                throw RuntimeError("cannot send: \(error.message)")
                            }
                            sending.add(-1)
                        }
                        // End of stdin: answers may still come for a moment.
                        try? await Task.sleep(for: linger)
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
            if sending.value > 0, let end = channel.end {
                // Closed under an SDU being sent: not all of stdin went.
                throw RuntimeError("the channel closed (\(end)) while an SDU was being sent: it did not all go")
            }
            await channel.close()
        }
        return 0
    }
}

/// The channels `l2cap listen` has open.
final class OpenChannels: Sendable {
    private let list = Mutex<[L2CAPChannel]>([])
    var all: [L2CAPChannel] { list.withLock { $0 } }
    func add(_ c: L2CAPChannel) { list.withLock { $0.append(c) } }
    func remove(_ c: L2CAPChannel) { list.withLock { $0.removeAll { $0 === c } } }
}

/// A count shared by tasks.
final class Counter: Sendable {
    private let n = Atomic<Int>(0)
    func add(_ d: Int) { n.add(d, ordering: .relaxed) }
    var value: Int { n.load(ordering: .relaxed) }
}
