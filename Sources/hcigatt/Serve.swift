import BluetoothGATT
import BluetoothLE
import BluetoothHost
import BluetoothSecurity
import BluetoothWire
import HCIGATTFormat
#if canImport(Glibc)
import Glibc
#endif

/// Lines for what happens on the server, text or JSON Lines, flushed one by one (a script
/// reading the pipe sees each as it happens).
final class ServeOutput: Sendable {
    let json: Bool
    let layout: GATTDatabase

    init(json: Bool, layout: GATTDatabase) {
        self.json = json
        self.layout = layout
    }

    private func emit(_ event: String, _ fields: [Field], text: String) {
        if json {
            Console.out(FieldRenderer.jsonObject([Field("event", .text(event))] + fields))
        } else {
            Console.out(text)
        }
        Console.flushOut()
    }

    private func clientFields(_ c: GATTServerClient) -> [Field] {
        [Field("client", .uint(c.id.rawValue)), Field("peer", .text(c.peer))]
    }

    /// "2A1C Temperature Measurement" for the characteristic a handle belongs to.
    func label(_ handle: UInt16) -> (uuid: String, text: String) {
        guard let c = layout.characteristic(containing: handle) else { return ("", "handle 0x\(Hex.pad(handle, 4))") }
        let what = handle == c.valueHandle ? "" : (c.descriptors.first { $0.handle == handle }.map { " \($0.name ?? $0.uuid.description)" } ?? "")
        return (c.uuid.description, "\(uuidLabel(c.uuid))\(what)")
    }

    func advertising(name: String, address: String, profiles: [String], set: AdvertisingSetInfo) {
        var fields = [Field("name", .text(name)), Field("address", .text(address)),
                      Field("profiles", .list(profiles.map { .text($0) })),
                      Field("pdus", .text(set.legacyPDUs ? "legacy" : "extended"))]
        var how = set.legacyPDUs ? "" : " (extended advertising)"
        if let p = set.selectedTxPower {
            fields.append(Field("tx_power", .int(Int64(p))))
            how += " at \(p) dBm"
        }
        emit("advertising", fields,
             text: "advertising \"\(name)\" as \(address)\(how): \(profiles.joined(separator: ", "))")
    }

    func pairing(_ e: PairingEvent) {
        switch e {
        case .paired(let link, let r):
            emit("paired", [Field("peer", .text("\(link.address)")), Field("secure_connections", .bool(r.secureConnections)),
                            Field("method", .text(r.method.description)), Field("key_size", .uint(UInt64(r.keySize))),
                            Field("authenticated", .bool(r.authenticated)), Field("bonded", .bool(r.bonded))],
                 text: "paired with \(link.address): \(r.secureConnections ? "LE Secure Connections" : "LE legacy pairing"), \(r.method), \(r.keySize)-byte key\(r.bonded ? ", bonded" : "")")
        case .failed(let link, let error):
            emit("pairing-failed", [Field("peer", .text("\(link.address)")), Field("message", .text(error.message))],
                 text: error.message)
        case .bondNotStored(let link, let error):
            emit("bond-not-stored", [Field("peer", .text("\(link.address)")), Field("message", .text(error.message))],
                 text: "the bond with \(link.address) was not stored: \(error.message)")
        }
    }

    /// The passkey shown for a central to type (JSON only: the text line is on stderr).
    func passkey(_ link: LEConnection, _ value: UInt32) {
        emit("passkey", [Field("peer", .text("\(link.address)")), Field("passkey", .text(SecurityOptions.sixDigits(value)))],
             text: "")
    }

    func note(_ s: String) {
        if json { emit("note", [Field("message", .text(s))], text: s) } else { Console.err(s) }
    }

    func question(_ c: GATTServerClient, _ q: String) {
        emit("question", clientFields(c) + [Field("question", .text(q))], text: "question from \(c.peer): \"\(q)\"")
    }

    func answer(_ c: GATTServerClient, _ a: String) {
        emit("answer", clientFields(c) + [Field("answer", .text(a))], text: "answer to \(c.peer): \"\(a)\"")
    }

    func event(_ e: GATTServerEvent) {
        switch e {
        case .connected(let c):
            emit("connected", clientFields(c), text: "connected \(c.peer) [client \(c.id.rawValue)]")
        case .disconnected(let c, let reason):
            emit("disconnected", clientFields(c) + [Field("reason", .text(reason))], text: "disconnected \(c.peer): \(reason)")
        case .mtuChanged(let c, let mtu):
            emit("mtu", clientFields(c) + [Field("mtu", .uint(UInt64(mtu)))], text: "mtu \(mtu) with \(c.peer)")
        case .wrote(let c, let handle, let value, let withResponse):
            let l = label(handle)
            emit("write", clientFields(c) + [Field("handle", .uint(UInt64(handle))), Field("uuid", .text(l.uuid)),
                                              Field("value", .bytes(value)), Field("with_response", .bool(withResponse))],
                 text: "write \(l.text) by \(c.peer): \(value.isEmpty ? "(empty)" : Hex.string(value, separator: " "))\(withResponse ? "" : " (without response)")")
        case .subscriptionChanged(let c, let valueHandle, let config):
            let l = label(valueHandle)
            emit("subscription", clientFields(c) + [Field("handle", .uint(UInt64(valueHandle))), Field("uuid", .text(l.uuid)),
                                                     Field("notify", .bool(config.contains(.notify))),
                                                     Field("indicate", .bool(config.contains(.indicate)))],
                 text: "\(config.isEmpty ? "unsubscribed" : "subscribed") \(c.peer) to \(l.text)\(config.isEmpty ? "" : " (\(config))")")
        case .indicationConfirmed(let c, let handle):
            let l = label(handle)
            emit("confirmed", clientFields(c) + [Field("handle", .uint(UInt64(handle))), Field("uuid", .text(l.uuid))],
                 text: "confirmed \(l.text) by \(c.peer)")
        case .indicationTimedOut(let c, let handle):
            let l = label(handle)
            emit("indication-timeout", clientFields(c) + [Field("handle", .uint(UInt64(handle))), Field("uuid", .text(l.uuid))],
                 text: "no confirmation of \(l.text) from \(c.peer) within 30 s: closing its link")
        case .peerFault(let c, let detail):
            emit("peer-fault", clientFields(c) + [Field("detail", .text(detail))], text: "\(c.peer): \(detail)")
        case .bondRestored(let c, let subscriptions, let serviceChanged):
            emit("bond-restored", clientFields(c) + [Field("subscriptions", .uint(UInt64(subscriptions))),
                                                     Field("service_changed", .bool(serviceChanged))],
                 text: "\(c.peer): bonded client back, \(subscriptions) subscription\(subscriptions == 1 ? "" : "s") restored"
                     + (serviceChanged ? "; the database changed since: Service Changed sent" : ""))
        }
    }
}

enum ServeCommand {
    static var command: Command {
        Command(
            name: "serve", summary: "Be a peripheral: advertise and serve GATT profiles",
            help: """
            Usage: hcigatt serve --profile NAME[,NAME...] [--name N] [--json] [OPTIONS]
                   hcigatt serve --db FILE [--name N] [OPTIONS]

            Advertises, accepts centrals (up to --max-connections at once, advertising again
            after each connection) and serves a GATT database: Generic Access (the name),
            Generic Attribute (Service Changed, Client Supported Features, Database Hash) and
            the chosen profiles, which send realistic changing values to subscribers. Prints
            connections, MTU exchanges, subscriptions, writes and confirmations as they
            happen. Runs until interrupted (Ctrl-C), then stops advertising and disconnects.

            Profiles:
            \(ServeProfile.all.map { "  \($0.name.padding(16))\($0.summary)" }.joined(separator: "\n"))

            Options:
              --profile NAME         a profile above; repeat or separate with commas
              --db FILE              a database from a JSON description (see README)
              --name N               the device name advertised and in Device Name (default hcigatt)
              --appearance N         the Appearance value (e.g. 0x0300 thermometer; default 0)
              --max-connections N    centrals served at once (default 4)
              --adv-interval MS      advertising interval (20-10240 ms, default 100)
              --random-address       advertise from a fresh random static address
              --privacy              advertise from resolvable private addresses made with this
                                     host's IRK (kept in the bond directory as local.irk), a
                                     new one every --rpa-timeout; bonding gives centrals the
                                     IRK and the public address, so they know this host behind
                                     every one of them (Core Vol 3 Part C §10.7)
              --rpa-timeout S        seconds between private addresses (default 900, 30-3600)
              --extended             extended advertising PDUs (Bluetooth 5): the whole name and
                                     every service UUID in one advertisement, no scan response
              --legacy               legacy PDUs only (default: legacy, unless the data needs more)
              --tx-power DBM         requested transmit power (-127...20; extended commands only)
              --security LEVEL       encrypted or authenticated: every value of the profiles
                                     (and their subscriptions) needs a link with that security;
                                     a central pairs (or encrypts with its bond) first
              --manual               8ball: type each answer on stdin instead of a random one
              --json                 one JSON object per event
            \(ControllerOptions.help)
            """,
            spec: Arguments.Spec(flags: ControllerOptions.flags.union(["json", "manual", "random-address", "extended", "legacy", "privacy"]),
                                 options: ControllerOptions.options.union(["profile", "db", "name", "appearance",
                                                                           "max-connections", "adv-interval", "tx-power", "security",
                                                                           "rpa-timeout"])),
            run: { args in try await run(args) })
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        try await run(ServeSettings(args))
    }

    static func run(_ settings: ServeSettings) async throws -> Int32 {
        let (name, appearance, requirement, extra) = (settings.name, settings.appearance, settings.requirement, settings.extraServices)
        let profiles = settings.profiles
        let services = [GATTLocalService.genericAccess(deviceName: name, appearance: appearance), .genericAttribute()]
            + (profiles.flatMap(\.services) + extra).map { requirement.map($0.requiring) ?? $0 }
        let server: GATTServer
        // Bonded clients keep their subscriptions across connections (and restarts).
        let bonded = GATTBondedClients(store: settings.bondStore)
        for failure in bonded.loadFailures { Console.err("serve: \(failure) (not used)") }
        do { server = try GATTServer(services: services, bondedClients: bonded) } catch { throw RuntimeError("cannot build the GATT database: \(error)") }
        let advertised = profiles.flatMap(\.advertised) + extra.filter(\.isPrimary).map(\.uuid)
        let extended = settings.pdus == .extended
        let (adv, scanResponse) = extended
            ? (try extendedAdvertisingPayload(name: name, services: advertised, appearance: appearance), [])
            : advertisingPayload(name: name, services: advertised, appearance: appearance)

        let privacy = settings.address == .privacy
        let rpaTimeout = settings.rpaTimeout
        let out = ServeOutput(json: settings.json, layout: server.layout)
        var controllerSettings = settings.controller
        if settings.json {
            // A script reading the events needs the passkey to type on the central.
            let shown = controllerSettings.options.pairingAgent.displayPasskey
            controllerSettings.options.pairingAgent.displayPasskey = { link, v in
                shown(link, v)
                out.passkey(link, v)
            }
        }
        let controller = try await LocalController.open(controllerSettings)
        if privacy && controller.host.info.address == .zero {
            // Said before our IRK is made (and kept) for nothing.
            try? await controller.close()
            throw RuntimeError("--privacy needs a controller with a public address (the identity bonded centrals learn)")
        }
        let irk: UInt128? = privacy ? try settings.bondStore.localIdentityResolvingKey() : nil
        let choice: AdvertisingAddressChoice = irk.map { .privateAddress(irk: $0) } ?? (settings.address == .randomStatic ? .randomStatic : .automatic)
        let own: AdvertisingConfiguration.OwnAddress
        let ownText: String
        do throws(BluetoothError) {
            let chosen = try controller.host.advertisingAddress(choice)
            (own, ownText) = (chosen.own, "\(chosen.address)")
        } catch {
            try? await controller.close()
            throw RuntimeError(error.message)
        }
        let config = AdvertisingConfiguration(advertisingData: adv, scanResponseData: scanResponse,
                                              interval: settings.interval,
                                              ownAddress: own, maximumConnections: settings.maximumConnections,
                                              pdus: settings.pdus, txPower: settings.txPower)
        let ctx = ProfileContext(server: server, out: out, manual: settings.manual,
                                 answers: settings.manual ? AnswerSource() : nil)
        let host = controller.host
        let chosen = profiles, address = ownText, profileNames = profiles.map(\.name) + (extra.isEmpty ? [] : ["db"])
        var failure: (any Error)?
        do {
            try await runInterruptible {
                // Child tasks say whether serving must end when they do (profile loops may
                // finish early; the connection and event loops end only with the host).
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        guard let reason = await server.serveIncomingLinks(of: host) else { return true }  // interrupted: a clean stop
                        throw RuntimeError("the controller went away: \(reason.message)")
                    }
                    group.addTask {
                        for await e in host.pairingEvents { out.pairing(e) }
                        return false
                    }
                    group.addTask {
                        for await event in server.events {
                            out.event(event)
                            for p in chosen { await p.onEvent(event, ctx) }
                        }
                        return true
                    }
                    let set: AdvertisingSetInfo
                    do throws(HostError) {
                        set = try await host.startAdvertising(config)
                    } catch {
                        throw RuntimeError(error.message)
                    }
                    out.advertising(name: name, address: address, profiles: profileNames, set: set)
                    if let irk {
                        // A new private address every rpaTimeout (Core Vol 3 Part C §10.7.1.2):
                        // advertising restarts from it; links stay as they are.
                        let base = config
                        group.addTask {
                            do throws(BluetoothError) {
                                try await host.rotatePrivateAddress(base, irk: irk, every: rpaTimeout) { a in
                                    out.note("advertising from \(a) now (a new private address)")
                                }
                            } catch {
                                throw RuntimeError(error.message)
                            }
                            return false
                        }
                    }
                    for p in chosen {
                        group.addTask {
                            await p.run(ctx)
                            return false
                        }
                    }
                    for try await ends in group where ends { break }
                    group.cancelAll()
                }
            }
        } catch {
            failure = error
        }
        await host.stopAdvertising()
        try await controller.close()
        await bonded.flush()
        for failure in bonded.writeFailures { Console.err("serve: could not keep a bonded client's subscriptions: \(failure)") }
        if let failure { throw failure }
        return 0
    }

    /// Extended advertising: flags, the complete name, every service UUID and the appearance
    /// in one advertising data (no scan response: connectable extended advertising has none).
    static func extendedAdvertisingPayload(name: String, services: [BluetoothUUID], appearance: UInt16) throws -> [UInt8] {
        var adv = AdvertisingDataBuilder(maximumLength: AdvertisingData.extendedMaximumLength)
        adv.append(.flags([.leGeneralDiscoverable, .brEdrNotSupported]))
        adv.append(.localName(name, complete: true))
        adv.append(contentsOf: ADStructureValue.serviceUUIDs(services, complete: true))
        if appearance != 0 {
            adv.append(ADStructureValue(type: .appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]))
        }
        do { return try adv.encoded() } catch { throw RuntimeError("cannot build the extended advertising data: \(error)") }
    }

    static func advertisingPayload(name: String, services: [BluetoothUUID], appearance: UInt16) -> ([UInt8], [UInt8]) {
        AdvertisingDataBuilder.legacyPayload(name: name, services: services, appearance: appearance)
    }
}

/// `serve`'s options, parsed once: every mistake is a usage error before the controller opens.
struct ServeSettings: Sendable {
    /// Where advertising comes from (`--privacy`, `--random-address`, or the controller's choice).
    enum AddressSetting: Sendable, Equatable { case automatic, randomStatic, privacy }

    var controller: ControllerSettings
    var profiles: [ServeProfile]
    var extraServices: [GATTLocalService]
    var name: String
    var appearance: UInt16
    var maximumConnections: Int
    var interval: ClosedRange<Duration>
    var pdus: AdvertisingConfiguration.PDUs
    var txPower: Int8?
    var requirement: GATTSecurityRequirement?
    var address: AddressSetting
    var rpaTimeout: Duration
    var manual: Bool
    var json: Bool

    var bondStore: BondStore { BondStore(directory: controller.options.bondDirectory ?? BondStore.defaultDirectory) }

    init(_ args: Arguments) throws {
        guard args.positional.isEmpty else { throw UsageError("unexpected argument '\(args.positional[0])' (profiles go after --profile)") }
        var profiles: [ServeProfile] = []
        for n in args.all("profile").flatMap({ $0.split(separator: ",").map(String.init) }) {
            guard let p = ServeProfile.named(n) else {
                throw UsageError("unknown profile '\(n)'; profiles: \(ServeProfile.all.map(\.name).joined(separator: ", "))")
            }
            if !profiles.contains(where: { $0.name == p.name }) { profiles.append(p) }
        }
        self.profiles = profiles
        extraServices = try args.option("db").map(DatabaseFile.load) ?? []
        guard !profiles.isEmpty || !extraServices.isEmpty else { throw UsageError("give at least one --profile (or --db FILE)") }
        name = args.option("name") ?? "hcigatt"
        guard !name.isEmpty, name.utf8.count <= 248 else { throw UsageError("--name takes 1-248 bytes of UTF-8") }
        appearance = 0
        if let text = args.option("appearance") {
            guard let v = parseInteger(text).flatMap(UInt16.init(exactly:)) else { throw UsageError("--appearance takes 0-0xFFFF, not '\(text)'") }
            appearance = v
        }
        maximumConnections = 4
        if let text = args.option("max-connections") {
            guard let n = Int(text), (1 ... 32).contains(n) else { throw UsageError("--max-connections takes 1-32, not '\(text)'") }
            maximumConnections = n
        }
        var intervalMs = 100.0
        if let text = args.option("adv-interval") {
            guard let v = Double(text), v.isFinite, (20 ... 10240).contains(v) else { throw UsageError("--adv-interval takes 20-10240 ms, not '\(text)'") }
            intervalMs = v
        }
        // The controller picks within [interval, 1.5 × interval], capped by the spec's 10.24 s.
        interval = .milliseconds(intervalMs) ... .milliseconds(min(intervalMs * 1.5, 10240))
        switch (args.flag("extended"), args.flag("legacy")) {
        case (true, true): throw UsageError("--extended and --legacy exclude each other")
        case (true, false): pdus = .extended
        case (false, true): pdus = .legacy
        case (false, false): pdus = .automatic
        }
        txPower = nil
        if let text = args.option("tx-power") {
            guard let v = Int8(text), (-127 ... 20).contains(v) else { throw UsageError("--tx-power takes -127...20 dBm, not '\(text)'") }
            txPower = v
        }
        switch args.option("security") {
        case nil, "none"?: requirement = nil
        case "encrypted"?: requirement = .encryption
        case "authenticated"?: requirement = .authentication
        case let other?: throw UsageError("--security takes encrypted or authenticated, not '\(other)'")
        }
        manual = args.flag("manual")
        if manual && !profiles.contains(where: { $0.name == "8ball" }) {
            throw UsageError("--manual answers the 8ball profile's questions; add --profile 8ball")
        }
        switch (args.flag("privacy"), args.flag("random-address")) {
        case (true, true): throw UsageError("--privacy and --random-address exclude each other")
        case (true, false): address = .privacy
        case (false, true): address = .randomStatic
        case (false, false): address = .automatic
        }
        rpaTimeout = try ControllerOptions.seconds(args, "rpa-timeout", default: 900, range: 30 ... 3600)
        if args.option("rpa-timeout") != nil && address != .privacy { throw UsageError("--rpa-timeout goes with --privacy") }
        json = args.flag("json")
        controller = try ControllerSettings(args)
    }
}

/// "0x0300", "768".
func parseInteger(_ text: String) -> Int? {
    if text.hasPrefix("0x") || text.hasPrefix("0X") { return Int(text.dropFirst(2), radix: 16) }
    return Int(text)
}

enum AskCommand {
    static var command: Command {
        Command(
            name: "ask", summary: "Ask a Magic 8-Ball peripheral a question and print its answer",
            help: """
            Usage: hcigatt ask [ADDR|NAME] "QUESTION" [OPTIONS]

            The 8-Ball's central (the `serve --profile 8ball` peripheral, or any device with
            its service): connects (to the first device advertising the 8-Ball service when
            no ADDR is given), subscribes to the answer, writes the question without
            response, prints the answer and disconnects.

            Options:
              --timeout S            how long to wait for the answer (default 10)
              --json                 the answer as a JSON object
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["json"]), options: PeerOptions.options.union(["timeout"])),
            run: { args in try await run(args) })
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        let target: DeviceTarget
        let question: String
        switch args.positional.count {
        case 1: (target, question) = (DeviceTarget.service(ServeProfile.eightBallService), args.positional[0])
        case 2: (target, question) = (try DeviceTarget(argument: args.positional[0]), args.positional[1])
        default: throw UsageError("give the question (and optionally ADDR or NAME before it)")
        }
        guard !question.isEmpty else { throw UsageError("the question is empty") }
        let timeout = try ControllerOptions.seconds(args, "timeout", default: 10, range: 0.1 ... 600)
        let peer = try await ConnectedPeer.open(try PeerCommandSettings(args), target: target)
        do {
            let answer = try await ask(peer, question, timeout: timeout)
            if args.flag("json") {
                Console.out(FieldRenderer.jsonObject([Field("device", .text(peer.peer.description)), Field("question", .text(question)),
                                                      Field("answer", .text(answer))]))
            } else {
                Console.out(answer)
            }
        } catch {
            await peer.close()
            throw error
        }
        await peer.close()
        return 0
    }

    static func ask(_ peer: ConnectedPeer, _ question: String, timeout: Duration) async throws -> String {
        let client = peer.client
        let services = try await client.discoverPrimaryServices(uuid: ServeProfile.eightBallService)
        guard let service = services.first else { throw RuntimeError("\(peer.peer) has no Magic 8-Ball service (\(ServeProfile.eightBallService))") }
        let chars = try await client.discoverCharacteristics(of: service)
        guard let q = chars.first(where: { $0.uuid == ServeProfile.eightBallQuestion }),
              let a = chars.first(where: { $0.uuid == ServeProfile.eightBallAnswer }) else {
            throw RuntimeError("\(peer.peer)'s 8-Ball service lacks the question or answer characteristic")
        }
        let answers = try await client.subscribe(characteristic: a)
        let bytes = Array(question.utf8)
        let mtu = try await client.exchangeMTU()
        guard bytes.count <= mtu - 3 else { throw RuntimeError("the question is \(bytes.count) bytes; at most \(mtu - 3) fit in one write at ATT_MTU \(mtu)") }
        try await client.writeWithoutResponse(handle: q.valueHandle, value: bytes)
        let answer: String? = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                for try await v in answers { return String(decoding: v.value, as: UTF8.self) }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        try? await client.unsubscribe(characteristic: a)
        guard let answer else { throw RuntimeError("no answer from \(peer.peer) within \(timeout)") }
        return answer
    }
}
