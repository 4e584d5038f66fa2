import BluetoothGATT
import BluetoothLE
import BluetoothHost
import BluetoothWire
import Glibc
import HCIGATTFormat
import Synchronization

/// One framer per peer, and a flush of what a peer sent without a newline once it has been
/// quiet for a second (a phone app that sends no line ends is still heard).
final class ChatInbox: Sendable {
    private struct Entry {
        var framer = MessageFramer()
        var generation = 0
        /// A quiet-timer task is running for this peer.
        var timing = false
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// Gets the key messages came under and the message.
    private let deliver: @Sendable (_ key: String, _ message: String) -> Void

    init(_ deliver: @escaping @Sendable (_ key: String, _ message: String) -> Void) { self.deliver = deliver }

    /// Bytes from the peer `key` (one framer per key: per link or channel).
    func received(_ bytes: [UInt8], from peer: String) {
        let (messages, startTimer, generation): ([String], Bool, Int) = entries.withLock { all in
            var e = all[peer] ?? Entry()
            let m = e.framer.append(bytes)
            e.generation += 1
            let start = !e.framer.pending.isEmpty && !e.timing
            if start { e.timing = true }
            all[peer] = e
            return (m, start, e.generation)
        }
        for m in messages { deliver(peer, m) }
        guard startTimer else { return }
        // One timer per peer: it sleeps until the peer has been quiet for a second.
        Task {
            var seen = generation
            while true {
                try? await Task.sleep(for: .seconds(1))
                let (done, rest): (Bool, String?) = entries.withLock { all in
                    guard var e = all[peer] else { return (true, nil) }
                    if e.framer.pending.isEmpty { e.timing = false; all[peer] = e; return (true, nil) }
                    if e.generation != seen { seen = e.generation; return (false, nil) }
                    let m = e.framer.flush()
                    e.timing = false
                    all[peer] = e
                    return (true, m)
                }
                if let rest { deliver(peer, rest) }
                if done { return }
            }
        }
    }

    /// The peer left: what it sent without a newline, then forget it.
    func closed(_ peer: String) {
        let rest: String? = entries.withLock { all in
            guard var e = all.removeValue(forKey: peer) else { return nil }
            return e.framer.flush()
        }
        if let rest { deliver(peer, rest) }
    }
}

/// Lines to send, one bounded queue and one sender task per peer: a peer that takes
/// nothing (no credits, a full link) holds back only its own messages, and what waits for
/// it is bounded (a line that does not fit its queue is not sent to it, and said so).
final class ChatOutbox: Sendable {
    static let limit = 256
    /// What a sender did with a line.
    enum Sent { case sent, dropped, gone }
    private struct Queue {
        var id: Int
        var label: String
        var continuation: AsyncStream<String>.Continuation
        var task: Task<Void, Never>
    }
    private let queues = Mutex<(next: Int, all: [String: Queue])>((0, [:]))

    /// Starts sending to the peer `key` (shown as `label`): each line posted goes to `send`
    /// in order. `.dropped` loses that line only; `.gone` ends the peer's queue. A queue
    /// that replaces one for the same key starts once the old sender has stopped, so one
    /// peer's lines never interleave.
    func open(_ key: String, label: String, send: @escaping @Sendable (String) async -> Sent) {
        let (lines, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(Self.limit))
        queues.withLock { q in
            q.next += 1
            let id = q.next
            let previous = q.all[key]
            previous?.continuation.finish()
            let task = Task {
                await previous?.task.value
                for await line in lines {
                    // Closed (or replaced) meanwhile: what is still queued is dropped.
                    guard self.isCurrent(key, id) else { break }
                    if await send(line) == .gone { break }
                }
                continuation.finish()
                self.queues.withLock { q in if q.all[key]?.id == id { q.all[key] = nil } }
            }
            q.all[key] = Queue(id: id, label: label, continuation: continuation, task: task)
        }
    }

    private func isCurrent(_ key: String, _ id: Int) -> Bool { queues.withLock { $0.all[key]?.id == id } }

    /// Stops sending to `key`; what is queued for it is dropped.
    func close(_ key: String) {
        queues.withLock { $0.all.removeValue(forKey: key) }?.continuation.finish()
    }

    /// Queues `line` for every open peer; returns how many took it and the labels of those
    /// whose queue was full.
    func post(_ line: String) -> (queued: Int, full: [String]) {
        let all = queues.withLock { Array($0.all.values) }
        var queued = 0
        var full: [String] = []
        for q in all {
            switch q.continuation.yield(line) {
            case .enqueued: queued += 1
            case .dropped: full.append(q.label)
            case .terminated: break
            @unknown default: break
            }
        }
        return (queued, full)
    }

    /// Closes every queue (nothing more is sent).
    func closeAll() {
        let all: [Queue] = queues.withLock { q in
            defer { q.all = [:] }
            return Array(q.all.values)
        }
        for q in all { q.continuation.finish() }
    }
}

/// Text lines or JSON events of a chat, flushed one by one.
struct ChatOutput: Sendable {
    let json: Bool

    func message(_ text: String, from peer: String, via: String = "gatt") {
        if json {
            Console.out(FieldRenderer.jsonObject([Field("event", .text("message")), Field("peer", .text(peer)), Field("via", .text(via)),
                                                  Field("text", .text(text))]))
        } else {
            Console.out(MessageFramer.printable(text))
        }
        Console.flushOut()
    }


    func event(_ event: String, peer: String, text: String, _ extra: [Field] = []) {
        if json {
            Console.out(FieldRenderer.jsonObject([Field("event", .text(event)), Field("peer", .text(peer))] + extra))
            Console.flushOut()
        } else {
            Console.err(text)
        }
    }
}

enum ChatCommand {
    /// The Nordic UART Service: the chat service (128-bit), its RX (centrals write) and TX
    /// (notified to centrals) characteristics.
    static let service = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let rx = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
    /// Where an L2CAP server publishes its PSM (UInt16, little endian): the UUID
    /// CoreBluetooth uses (`CBUUIDL2CAPPSMCharacteristicString`).
    static let psmCharacteristic = BluetoothUUID("ABDD3056-28FA-441D-A470-55A75A52553A")!
    static let defaultPSM: UInt16 = 0x0080
    /// Our side's channel: messages of several kB are a few SDUs.
    static let channelParameters = L2CAPChannelParameters(mtu: 4096, mps: 247)

    static var command: Command {
        Command(
            name: "chat", summary: "Talk to another hcigatt (or any BLE UART app): lines typed go over, lines received are printed",
            help: """
            Usage: hcigatt chat [--name N] [OPTIONS]          wait for someone to connect
                   hcigatt chat ADDR|NAME [OPTIONS]           connect to a chat peer

            Each line on stdin is sent to the other side (to every connected peer when
            waiting); each message received is printed as one line; connects and
            disconnects are shown on stderr. A message may be longer than one packet: it
            is cut to fit and joined again, so several kB arrive as one line. Works from a
            terminal and from a pipe.

            The chat service is the Nordic UART Service (6E400001-B5A3-F393-E0A9-E50E24DCCA9E):
            centrals write (without response) to RX 6E400002, the peripheral notifies TX
            6E400003, each message ended by a newline; so phone apps for BLE UARTs work
            too. With --l2cap the messages go over an LE credit-based channel instead (the
            PSM is in the chat service, characteristic ABDD3056-28FA-441D-A470-55A75A52553A,
            as CoreBluetooth publishes it).

            Waiting runs until Ctrl-C. Connecting ends when the peer leaves, or at the end
            of stdin (after --linger seconds for answers).

            Options:
              --name N               waiting: the name advertised (default hcigatt-chat)
              --l2cap                an L2CAP channel instead of GATT (waiting: both are open)
              --psm PSM              the channel's PSM (default: what the peer publishes, 0x0080)
              --linger S             connecting: after end of stdin, wait S seconds (default 1)
              --json                 one JSON object per message and event, on stdout
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["l2cap", "json"]),
                                 options: PeerOptions.options.union(["name", "psm", "linger"])),
            run: { args in try await run(args) })
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        if let t = args.option("transport"), t.hasPrefix("l2cap:") {
            throw UsageError("chat needs an HCI transport: with \(t) the kernel owns the link")
        }
        let out = ChatOutput(json: args.flag("json"))
        let psm = try args.option("psm").map(L2CAPCommand.psm)
        switch args.positional.count {
        case 0:
            if args.option("linger") != nil { throw UsageError("--linger goes with connecting (chat ADDR|NAME)") }
            try PeerOptions.refuseCentralOptions(args, goWith: "connecting (chat ADDR|NAME)")
            let name = args.option("name") ?? "hcigatt-chat"
            guard !name.isEmpty, name.utf8.count <= 248 else { throw UsageError("--name takes 1-248 bytes of UTF-8") }
            return try await wait(ControllerSettings(args), name: name, l2cap: args.flag("l2cap"), out: out, psm: psm ?? defaultPSM)
        case 1:
            if args.option("name") != nil { throw UsageError("--name goes with waiting (chat without ADDR)") }
            let target = try DeviceTarget(argument: args.positional[0])
            let linger = try ControllerOptions.seconds(args, "linger", default: 1, range: 0 ... 3600)
            return try await connect(PeerCommandSettings(args), target: target, l2cap: args.flag("l2cap"), linger: linger, out: out, psm: psm)
        default:
            throw UsageError("expected at most one ADDR or NAME, not '\(args.positional.joined(separator: " "))'")
        }
    }

    // MARK: Waiting (the peripheral)

    /// Inbox and outbox keys: "VIA\tID\tPEER", one per GATT client or L2CAP channel.
    static func key(_ via: String, _ id: UInt64, _ peer: String) -> String { "\(via)\t\(id)\t\(peer)" }

    static func wait(_ settings: ControllerSettings, name: String, l2cap useL2CAP: Bool, out: ChatOutput, psm: UInt16) async throws -> Int32 {
        var chat = [
            GATTLocalCharacteristic(uuid: rx, properties: [.write, .writeWithoutResponse], descriptors: [.userDescription("RX")]),
            GATTLocalCharacteristic(uuid: tx, properties: .notify, descriptors: [.userDescription("TX")]),
        ]
        if useL2CAP {
            chat.append(GATTLocalCharacteristic(uuid: psmCharacteristic, properties: .read,
                                                value: .stored([UInt8(psm & 0xFF), UInt8(psm >> 8)])))
        }
        let server: GATTServer
        do {
            server = try GATTServer(services: [.genericAccess(deviceName: name), .genericAttribute(),
                                               GATTLocalService(uuid: service, characteristics: chat)])
        } catch { throw RuntimeError("cannot build the GATT database: \(error)") }
        guard let rxHandle = server.valueHandle(of: rx), let txHandle = server.valueHandle(of: tx) else {
            throw RuntimeError("the chat service lacks its characteristics")
        }
        let controller = try await LocalController.open(settings)
        let host = controller.host
        // Inbox and outbox keys: "VIA\tID\tPEER", one per GATT client or L2CAP channel (two
        // channels from one device are two peers).
        let inbox = ChatInbox { key, text in
            let parts = key.split(separator: "\t", maxSplits: 2).map(String.init)
            out.message(text, from: parts.count == 3 ? parts[2] : key, via: parts.first ?? "gatt")
        }
        let outbox = ChatOutbox()
        let channels = OpenChannels()
        let incoming = useL2CAP ? host.listenL2CAP(psm: psm, parameters: channelParameters) : nil
        let (adv, scan) = ServeCommand.advertisingPayload(name: name, services: [service], appearance: 0)
        var failure: (any Error)?
        do {
            _ = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        if let reason = await server.serveIncomingLinks(of: host) {
                            throw RuntimeError("the controller went away: \(reason.message)")
                        }
                    }
                    group.addTask {
                        for await event in server.events {
                            switch event {
                            case .connected(let c):
                                out.event("connected", peer: c.peer, text: "connected: \(c.peer)")
                            case .disconnected(let c, let reason):
                                inbox.closed(Self.key("gatt", c.id.rawValue, c.peer))
                                outbox.close(Self.key("gatt", c.id.rawValue, c.peer))
                                out.event("disconnected", peer: c.peer, text: "disconnected: \(c.peer) (\(reason))",
                                          [Field("reason", .text(reason))])
                            case .subscriptionChanged(let c, let handle, let config) where handle == txHandle:
                                if config.contains(.notify) {
                                    outbox.open(Self.key("gatt", c.id.rawValue, c.peer), label: c.peer) { line in
                                        let size = min((server.mtu(of: c.id) ?? ATT.defaultMTU) - 3, ATT.maximumAttributeValueLength)
                                        for piece in MessageFramer.pieces(line, size: size) {
                                            let r = await server.notifyWhenReady(txHandle, value: piece, to: [c.id], store: false)
                                            if let f = r.failed.first {
                                                Console.err("not sent to \(c.peer): \(f.1)")
                                                // A full link loses this line; anything else (gone,
                                                // unsubscribed) ends the peer's queue.
                                                if case .sendQueueFull = f.1 { return .dropped }
                                                return .gone
                                            }
                                        }
                                        return .sent
                                    }
                                } else {
                                    outbox.close(Self.key("gatt", c.id.rawValue, c.peer))
                                }
                                out.event(config.contains(.notify) ? "subscribed" : "unsubscribed", peer: c.peer,
                                          text: config.contains(.notify) ? "\(c.peer) receives messages now" : "\(c.peer) stopped receiving messages")
                            case .wrote(let c, let handle, let value, _) where handle == rxHandle:
                                inbox.received(value, from: Self.key("gatt", c.id.rawValue, c.peer))
                            default: break
                            }
                        }
                    }
                    if let incoming {
                        group.addTask {
                            await withDiscardingTaskGroup { each in
                                for await channel in incoming {
                                    channels.add(channel)
                                    let peer = "\(channel.connection.address)"
                                    out.event("channel", peer: peer, text: "channel open with \(peer) (PSM 0x\(Hex.pad(psm, 4)))")
                                    let k = Self.key("l2cap", UInt64(channel.connection.handle) << 16 | UInt64(channel.info.localCID), peer)
                                    outbox.open(k, label: peer) { line in
                                        for piece in MessageFramer.pieces(line, size: channel.peerMTU) {
                                            do throws(HostError) { try await channel.send(piece) } catch {
                                                // A channel's send fails only when it closed.
                                                Console.err("not sent to \(peer): \(error.message)")
                                                return .gone
                                            }
                                        }
                                        return .sent
                                    }
                                    each.addTask {
                                        for await sdu in channel.sdus { inbox.received(sdu, from: k) }
                                        inbox.closed(k)
                                        outbox.close(k)
                                        channels.remove(channel)
                                        out.event("channel-closed", peer: peer, text: "channel with \(peer) closed: \(channel.end?.description ?? "closed")")
                                    }
                                }
                            }
                        }
                    }
                    group.addTask {
                        for await line in AnswerSource.stdinLines() {
                            let (queued, full) = outbox.post(line)
                            for peer in full { Console.err("\(peer) takes nothing (\(ChatOutbox.limit) messages wait for it); not sent to it: \(line)") }
                            if queued == 0 && full.isEmpty { Console.err("nobody is listening yet; not sent: \(line)") }
                        }
                        // End of stdin: keep receiving until Ctrl-C.
                        let (never, open) = AsyncStream<Void>.makeStream()
                        for await _ in never {}
                        withExtendedLifetime(open) {}
                    }
                    // A controller without a public address advertises from a random static one.
                    let ownText: String
                    do throws(BluetoothError) {
                        let chosen = try host.advertisingAddress(.automatic)
                        ownText = "\(chosen.address)"
                        do throws(HostError) {
                            _ = try await host.startAdvertising(AdvertisingConfiguration(advertisingData: adv, scanResponseData: scan, ownAddress: chosen.own))
                        } catch {
                            throw BluetoothError(.unavailable, "cannot advertise: \(error.message)")
                        }
                    } catch {
                        throw RuntimeError(error.message)
                    }
                    Console.err("waiting as \"\(name)\" (\(ownText))"
                        + (useL2CAP ? ", L2CAP PSM 0x\(Hex.pad(psm, 4))" : "") + "; Ctrl-C ends")
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            failure = error
        }
        outbox.closeAll()
        if useL2CAP { host.stopListeningL2CAP(psm: psm) }
        for c in channels.all { await c.close() }
        await host.stopAdvertising()
        try await controller.close()
        if let failure { throw failure }
        return 0
    }

    // MARK: Connecting (the central)

    static func connect(_ settings: PeerCommandSettings, target: DeviceTarget, l2cap useL2CAP: Bool, linger: Duration,
                        out: ChatOutput, psm: UInt16?) async throws -> Int32 {
        try await withPeer(settings, target) { p in
            let client = p.client
            let who = "\(p.peer)"
            let via = useL2CAP ? "l2cap" : "gatt"
            let inbox = ChatInbox { peer, text in out.message(text, from: peer, via: via) }
            guard let s = try await client.discoverPrimaryServices(uuid: service).first else {
                throw RuntimeError("\(who) has no chat service (\(service))")
            }
            let chars = try await client.discoverCharacteristics(of: s)
            out.event("connected", peer: who, text: "connected: \(who)")
            if useL2CAP {
                guard let link = p.connection else { throw RuntimeError("no link") }
                var channelPSM = psm ?? defaultPSM
                if psm == nil, let c = chars.first(where: { $0.uuid == psmCharacteristic }) {
                    let v = try await client.read(handle: c.valueHandle)
                    if v.count == 2 { channelPSM = UInt16(v[0]) | UInt16(v[1]) << 8 }
                }
                let channel: L2CAPChannel
                do throws(HostError) {
                    channel = try await link.openL2CAPChannel(psm: channelPSM, parameters: channelParameters)
                } catch {
                    throw RuntimeError("cannot open a channel to PSM 0x\(Hex.pad(channelPSM, 4)): \(error.message)", cause: error)
                }
                try await converse(out: out, who: who, linger: linger, receive: {
                    for await sdu in channel.sdus { inbox.received(sdu, from: who) }
                    inbox.closed(who)
                    return channel.end?.description ?? "closed"
                }, send: { line throws(HostError) in
                    for piece in MessageFramer.pieces(line, size: Int(channel.peerMTU)) { try await channel.send(piece) }
                })
                await channel.close()
                return
            }
            guard let r = chars.first(where: { $0.uuid == rx }), let t = chars.first(where: { $0.uuid == tx }) else {
                throw RuntimeError("\(who)'s chat service lacks RX (\(rx)) or TX (\(tx))")
            }
            let messages = try await client.subscribe(characteristic: t)
            let mtu = try await client.exchangeMTU()
            let unacknowledged = !r.properties.contains(.writeWithoutResponse)
            try await converse(out: out, who: who, linger: linger, receive: {
                do {
                    for try await v in messages { inbox.received(v.value, from: who) }
                    inbox.closed(who)
                    return "the peer ended the chat"
                } catch {
                    inbox.closed(who)
                    return describeGATT(error)
                }
            }, send: { line throws(GATTError) in
                for piece in MessageFramer.pieces(line, size: min(mtu - 3, ATT.maximumAttributeValueLength)) {
                    if unacknowledged {
                        try await client.write(handle: r.valueHandle, value: piece)
                    } else {
                        await client.bearer.waitForRoom(for: 3 + piece.count)
                        try await client.writeWithoutResponse(handle: r.valueHandle, value: piece)
                    }
                }
            })
            if client.failure == nil { try? await client.unsubscribe(characteristic: t) }
        }
        return 0
    }

    /// Lines from stdin go out through `send`; `receive` prints until the peer leaves and
    /// says why. Ends when the peer leaves, or `linger` after the end of stdin.
    static func converse<E: Error>(out: ChatOutput, who: String, linger: Duration,
                                   receive: @escaping @Sendable () async -> String,
                                   send: @escaping @Sendable (String) async throws(E) -> Void) async throws {
        _ = try await runInterruptible {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let why = await receive()
                    if !Task.isCancelled { out.event("disconnected", peer: who, text: "disconnected: \(who) (\(why))", [Field("reason", .text(why))]) }
                }
                group.addTask {
                    for await line in AnswerSource.stdinLines() {
                        do { try await send(line) } catch {
                            throw RuntimeError("cannot send: \((error as? HostError)?.message ?? describeGATT(error))")
                        }
                    }
                    try? await Task.sleep(for: linger)
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }
}
