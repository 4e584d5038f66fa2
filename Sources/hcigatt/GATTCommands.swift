import BluetoothGATT
import BluetoothLE
import BluetoothHost
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat

/// Options shared by the commands that talk to one peripheral.
enum PeerOptions {
    static let options: Set<String> = ControllerOptions.options.union(["scan-timeout", "connect-timeout", "att-timeout",
                                                                       "conn-interval", "conn-latency", "supervision-timeout", "phy"])
    static let flags: Set<String> = ControllerOptions.flags.union(["no-cache", "no-data-length"])

    /// A mode that waits for a central (l2cap listen, chat without a device) takes the link
    /// the central opens: the options for opening one are a usage error there, not ignored.
    static func refuseCentralOptions(_ args: Arguments, goWith mode: String) throws {
        let given = options.subtracting(ControllerOptions.options).filter { args.option($0) != nil }
            + flags.subtracting(ControllerOptions.flags).filter { args.flag($0) }
        if let o = given.sorted().first {
            throw UsageError("--\(o) goes with \(mode): waiting, the link is the one the central opens")
        }
    }

    static let help = """
      --no-cache             discover the whole database even for a bonded device (by
                             default its database is kept with the bond and reused after
                             one read of its Database Hash)
      --transport l2cap:hciN the kernel keeps the link and hcigatt speaks ATT on its L2CAP
                             socket (adapter up; security raised when the device asks)
      ADDR                   AA:BB:CC:DD:EE:FF[/public|/random], or a device name: found by
                             scanning first (exact name, else the first name containing it).
                             Without /public or /random the type is learned by scanning,
                             else public is assumed.
      --scan-timeout S       how long to scan for ADDR (default 5)
      --connect-timeout S    give up connecting after S seconds (default 10)
      --att-timeout S        ATT transaction timeout (default 30, the spec's)
      --conn-interval MS[-MS]  once connected, ask for this connection interval (7.5-4000 ms,
                             1.25 ms steps) with LE Connection Update; likewise
      --conn-latency N       peripheral latency in connection events (0-499) and
      --supervision-timeout MS  supervision timeout (100-32000 ms; default: the link's, or
                             twice the least the interval and latency allow)
      --phy P                the PHY to ask for once connected: auto (default: LE 2M where
                             both controllers have it), 1m, 2m or coded (long range); a
                             controller or device that refuses is said, the link goes on
      --no-data-length       do not ask for the longest data length (by default the
                             longest both controllers take, up to 251-byte payloads)
    \(ControllerOptions.help)
    """
}

/// `--conn-interval`, `--conn-latency`, `--supervision-timeout`: what to ask for with LE
/// Connection Update once the link is up, in the spec's units (nil: none of them given).
enum ConnectionParameterOptions {
    static func parse(_ args: Arguments) throws -> ConnectionParameterWish? {
        guard ["conn-interval", "conn-latency", "supervision-timeout"].contains(where: { args.option($0) != nil }) else { return nil }
        var wish = ConnectionParameterWish()
        if let text = args.option("conn-interval") {
            let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            let units = try parts.map { part -> UInt16 in
                guard let ms = Double(part), ms.isFinite, (7.5 ... 4000).contains(ms) else {
                    throw UsageError("--conn-interval takes milliseconds 7.5-4000 (or MIN-MAX), not '\(text)'")
                }
                return UInt16((ms / 1.25).rounded())
            }
            guard let lo = units.first, let hi = units.last, lo <= hi else {
                throw UsageError("--conn-interval MIN-MAX needs MIN ≤ MAX, not '\(text)'")
            }
            wish.interval = lo ... hi
        }
        if let text = args.option("conn-latency") {
            guard let n = UInt16(text), n <= 499 else { throw UsageError("--conn-latency takes 0-499 connection events, not '\(text)'") }
            wish.latency = n
        }
        if let text = args.option("supervision-timeout") {
            guard let ms = Double(text), ms.isFinite, (100 ... 32000).contains(ms) else {
                throw UsageError("--supervision-timeout takes milliseconds 100-32000, not '\(text)'")
            }
            wish.supervisionTimeout = UInt16((ms / 10).rounded())
        }
        return wish
    }
}

extension DeviceTarget {
    /// ADDR on the command line: a mistake in it is a usage error.
    init(argument text: String) throws {
        do throws(BluetoothError) { try self.init(parsing: text) } catch { throw UsageError(error.message) }
    }
}

/// The peer options, parsed once: how the library finds, connects and speaks to a device,
/// whether the kernel keeps the link (`--transport l2cap:hciN`), and the controller's.
struct PeerCommandSettings: Sendable {
    var peer: PeerSettings
    /// `l2cap:hciN`: the adapter whose kernel host keeps the link.
    var kernelAdapter: UInt16?
    /// The controller's options (nil with l2cap:hciN: the kernel has it).
    var controller: ControllerSettings?
    /// How the transport was given, for messages.
    var transportText: String?

    init(_ args: Arguments) throws {
        let scan = try ControllerOptions.seconds(args, "scan-timeout", default: 5, range: 0.1 ... 600)
        let connect = try ControllerOptions.seconds(args, "connect-timeout", default: 10, range: 0.1 ... 600)
        let att = try ControllerOptions.seconds(args, "att-timeout", default: 30, range: 0.05 ... 600)
        let wish = try ConnectionParameterOptions.parse(args)
        let phy: PHYPreference
        switch args.option("phy") {
        case nil: phy = .auto
        case let text?:
            guard let p = PHYPreference(rawValue: text.lowercased()) else { throw UsageError("--phy takes auto, 1m, 2m or coded, not '\(text)'") }
            phy = p
        }
        // A Signed Write is what an unencrypted link uses: no encryption with the bond then.
        peer = PeerSettings(scanTimeout: scan,
                            connect: ConnectSettings(timeout: connect, encryptWithBond: !args.flag("signed") && !args.flag("repair"), parameters: wish,
                                                     phy: phy, longestDataLength: !args.flag("no-data-length")),
                            attTimeout: att, reuseCache: !args.flag("no-cache"))
        transportText = args.option("transport")
        if let spec = transportText, spec.hasPrefix("l2cap:") {
            let name = spec.dropFirst("l2cap:".count)
            guard name.hasPrefix("hci"), let index = UInt16(name.dropFirst(3)) else {
                throw UsageError("--transport l2cap:hciN names an adapter, e.g. l2cap:hci0, not '\(spec)'")
            }
            if wish != nil {
                throw UsageError("--conn-interval/--conn-latency/--supervision-timeout need an HCI transport: with \(spec) the kernel owns the link")
            }
            if args.option("phy") != nil || args.flag("no-data-length") {
                throw UsageError("--phy and --no-data-length need an HCI transport: with \(spec) the kernel owns the link")
            }
            if args.option("snoop") != nil { throw UsageError("--snoop records HCI traffic; the kernel owns it with l2cap:hciN (use btmon)") }
            kernelAdapter = index
            // Pairing mistakes are still usage errors, though the kernel pairs.
            _ = try SecurityOptions.configuration(args)
        } else {
            controller = try ControllerSettings(args)
        }
    }

    /// The bond store of this command (the kernel's link has none of ours).
    var bonds: BondStore? { controller.flatMap { $0.options.bondDirectory.map { BondStore(directory: $0) } } }
}

/// A connected GATT peer (the library's ``GATTPeer``) and the controller it is on when this
/// command opened it; `close` disconnects (and closes that controller).
struct ConnectedPeer: Sendable {
    let gatt: GATTPeer
    /// The controller opened for this peer alone (nil: shared, or the kernel's link).
    let ownController: LocalController?
    let settings: PeerCommandSettings

    var client: GATTClient { gatt.client }
    var peer: LEAddress { gatt.address }
    var connection: LEConnection? { gatt.connection }

    /// Connects to `target`: over `shared` when given (several links on one controller),
    /// else over a controller of its own (or the kernel's L2CAP socket), telling the steps
    /// on stderr.
    static func open(_ settings: PeerCommandSettings, target: DeviceTarget, shared: LocalController? = nil) async throws -> ConnectedPeer {
        let route: PeerRoute
        var own: LocalController?
        if let adapter = settings.kernelAdapter {
            route = .kernel(adapter: adapter)
        } else if let shared {
            route = .host(shared.host)
        } else {
            guard let controller = settings.controller else { throw RuntimeError("no controller") }
            let opened = try await LocalController.open(controller)
            own = opened
            route = .host(opened.host)
        }
        do throws(BluetoothError) {
            let gatt = try await GATTPeer.open(target, via: route, settings: settings.peer) { Self.tell($0, target: target) }
            return ConnectedPeer(gatt: gatt, ownController: own, settings: settings)
        } catch {
            try? await own?.close()
            if error.kind == .invalidRequest { throw UsageError(error.message) }
            if error.kind == .notFound, target.query != nil {
                let what = Self.what(target)
                let nothing = if case .service(let u) = target { "no device with service \(uuidLabel(u))" } else { "no \(what)" }
                let seconds = formatSeconds(Double(settings.peer.scanTimeout.components.seconds)
                                            + Double(settings.peer.scanTimeout.components.attoseconds) / 1e18)
                throw RuntimeError("\(nothing) found in \(seconds) s of scanning (--scan-timeout)")
            }
            throw RuntimeError(error.message, cause: error.underlying ?? error)
        }
    }

    /// Finds the peer's address (or address type) by scanning, told as it goes: for several
    /// devices on one controller, found one after the other before connecting.
    static func resolve(_ target: DeviceTarget, host: HCIHost, timeout: Duration) async throws -> LEAddress {
        if case .address(let a) = target { return a }
        tell(.scanning(target), target: target)
        do throws(BluetoothError) {
            let found = try await target.find(on: host, timeout: timeout)
            tell(.found(found), target: target)
            return found.address
        } catch {
            if error.kind == .notFound {
                let nothing = if case .service(let u) = target { "no device with service \(uuidLabel(u))" } else { "no \(what(target))" }
                throw RuntimeError("\(nothing) found in \(formatSeconds(Double(timeout.components.seconds))) s of scanning (--scan-timeout)")
            }
            throw RuntimeError("scanning for \(what(target)) failed: \(error.message)")
        }
    }

    static func what(_ target: DeviceTarget) -> String { LinkText.what(target) }

    /// The library's progress, said as BlueZ's tools say it.
    static func tell(_ step: PeerProgress, target: DeviceTarget) {
        for line in LinkText.progress(step, target: target) { Console.err(line) }
    }

    /// The peer's database: for a bonded device, the one kept with its bond when one read
    /// of the Database Hash says it is current (or, with no hash on the server, until
    /// Service Changed); else discovered, and kept with the bond for next time.
    func discover() async throws -> GATTDiscovery {
        let start = monotonicNow()
        let reuse = settings.peer.reuseCache
        if !gatt.mayReuseCache(reuse) { Console.err("discovering...") }
        let r = try await gatt.discover(reuseCache: reuse)
        let elapsed = Duration.nanoseconds(Int64(clamping: monotonicNow() &- start))
        for line in LinkText.discovery(r, elapsed: elapsed, mtu: client.mtu) { Console.err(line) }
        let d = r.discovery
        return d
    }

    func close() async {
        await gatt.close()
        try? await ownController?.close()
    }
}

/// A handle (0x0010, 16) or a UUID naming an attribute.
enum AttributeRef {
    case handle(UInt16)
    case uuid(BluetoothUUID)

    init(_ text: String) throws {
        if text.hasPrefix("0x") || text.hasPrefix("0X"), let h = UInt16(text.dropFirst(2), radix: 16), h > 0 {
            self = .handle(h)
        } else if text.count <= 5, text.allSatisfy(\.isNumber), let h = UInt16(text), h > 0 {
            self = .handle(h)
        } else if let u = BluetoothUUID(text) {
            self = .uuid(u)
        } else {
            throw UsageError("'\(text)' is neither a handle (0x0010 or 16) nor a UUID (2A37, 0x2a37 or 128-bit)")
        }
    }
}

/// Connects, runs `body`, and disconnects whatever happens; errors come out as one clear line.
func withPeer(_ settings: PeerCommandSettings, _ target: DeviceTarget, shared: LocalController? = nil,
              _ body: (ConnectedPeer) async throws -> Void) async throws {
    let p = try await ConnectedPeer.open(settings, target: target, shared: shared)
    do {
        try await body(p)
    } catch {
        await p.close()
        throw RuntimeError(describeGATT(error), cause: (error as? RuntimeError)?.cause ?? error)
    }
    await p.close()
}

enum GATTDumpCommand {
    static var command: Command {
        Command(
            name: "gatt", summary: "Connect and dump the whole GATT database with readable values",
            help: """
            Usage: hcigatt gatt ADDR [--json] [--no-values] [OPTIONS]

            Connects, exchanges the MTU, discovers every service, included service,
            characteristic and descriptor, reads every readable value, and prints them.

            Options:
              --json                 one JSON object with the same content
              --no-values            discovery only, no reads
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["json", "no-values"]), options: PeerOptions.options),
            run: { args in try await run(args) }
        )
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count == 1 else { throw UsageError(args.positional.isEmpty ? "missing ADDR" : "unexpected argument '\(args.positional[1])'") }
        let target = try DeviceTarget(argument: args.positional[0])
        let settings = try PeerCommandSettings(args)
        let withValues = !args.flag("no-values"), json = args.flag("json")
        try await withPeer(settings, target) { p in
            let discovery = try await p.discover()
            let db = discovery.database
            let discoveryTrips = p.client.roundTrips
            if let link = p.connection?.parameters { Console.err("link: \(link)") }
            var values: [UInt16: Result<[UInt8], GATTError>] = [:]
            if withValues {
                for c in db.characteristics where c.properties.contains(.read) {
                    let handle = c.valueHandle
                    do { values[handle] = .success(try await p.client.read(handle: handle)) }
                    catch let e as GATTError { values[handle] = .failure(e) }
                    if case .failure(let e)? = values[handle], case .bearerClosed = e { throw e }
                }
            }
            if json {
                Console.out(FieldRenderer.jsonObject(jsonFields(db, values, p, roundTrips: discoveryTrips, source: discovery.source)))
            } else {
                printText(db, values)
            }
        }
        return 0
    }

    static func printText(_ db: GATTDatabase, _ values: [UInt16: Result<[UInt8], GATTError>]) {
        for s in db.services {
            Console.out("\(s.isPrimary ? "Service" : "Secondary service") \(uuidLabel(s.uuid))  [0x\(Hex.pad(s.startHandle, 4))-0x\(Hex.pad(s.endHandle, 4))]")
            for inc in s.includedServices {
                Console.out("  Includes \(uuidLabel(inc.uuid))  [0x\(Hex.pad(inc.startHandle, 4))-0x\(Hex.pad(inc.endHandle, 4))]")
            }
            for c in s.characteristics {
                Console.out("  Characteristic \(uuidLabel(c.uuid))  0x\(Hex.pad(c.valueHandle, 4))  [\(c.properties)]")
                switch values[c.valueHandle] {
                case .success(let v)?: Console.out("    value: \(ValueFormat.line(c.uuid, v))")
                case .failure(let e)?: Console.out("    value: (\(e))")
                case nil: break
                }
                for d in c.descriptors {
                    Console.out("    Descriptor \(uuidLabel(d.uuid))  0x\(Hex.pad(d.handle, 4))")
                }
            }
        }
    }

    static func jsonFields(_ db: GATTDatabase, _ values: [UInt16: Result<[UInt8], GATTError>], _ p: ConnectedPeer, roundTrips: Int,
                           source: GATTDiscoverySource) -> [Field] {
        let services: [FieldValue] = db.services.map { s in
            .object([
                Field("uuid", .text(s.uuid.description)),
                Field("name", s.name.map { .text($0) } ?? .text("")),
                Field("primary", .bool(s.isPrimary)),
                Field("start_handle", .uint(UInt64(s.startHandle))),
                Field("end_handle", .uint(UInt64(s.endHandle))),
                Field("included_services", .list(s.includedServices.map { inc in
                    .object([Field("uuid", .text(inc.uuid.description)), Field("start_handle", .uint(UInt64(inc.startHandle))),
                             Field("end_handle", .uint(UInt64(inc.endHandle)))])
                })),
                Field("characteristics", .list(s.characteristics.map { c in
                    var f: [Field] = [
                        Field("uuid", .text(c.uuid.description)),
                        Field("name", c.name.map { .text($0) } ?? .text("")),
                        Field("declaration_handle", .uint(UInt64(c.declarationHandle))),
                        Field("value_handle", .uint(UInt64(c.valueHandle))),
                        Field("properties", .list(c.properties.names.map { .text($0) })),
                        Field("descriptors", .list(c.descriptors.map { d in
                            .object([Field("uuid", .text(d.uuid.description)), Field("handle", .uint(UInt64(d.handle))),
                                     Field("name", d.name.map { .text($0) } ?? .text(""))])
                        })),
                    ]
                    switch values[c.valueHandle] {
                    case .success(let v)?: f.append(Field("value", .object(ValueFormat.fields(c.uuid, v))))
                    case .failure(let e)?: f.append(Field("read_error", .text(e.description)))
                    case nil: break
                    }
                    return .object(f)
                })),
            ])
        }
        var out = [
            Field("address", .text(p.peer.address.description)),
            Field("address_type", .text(p.peer.type.description)),
        ]
        if let id = p.connection?.identity {
            out.append(Field("identity", .text(id.address.description)))
            out.append(Field("identity_type", .text(id.type.description)))
        }
        out += [
            Field("mtu", .uint(UInt64(p.client.mtu))),
            Field("discovery_round_trips", .uint(UInt64(roundTrips))),
            Field("database_source", .text(source.jsonName)),
            Field("services", .list(services)),
        ]
        if let link = p.connection?.parameters {
            let l = LinkText.jsonFields(link)
            out.insert(Field("link", .object(l)), at: 2)
        }
        return out
    }
}

/// A GATT command's failure as one line (the library's wording, with its hints).
func describeGATT(_ error: any Error) -> String { LinkText.describe(error) }

/// Finds the characteristic an AttributeRef names (by value handle or UUID).
func resolveCharacteristic(_ ref: AttributeRef, _ p: ConnectedPeer) async throws -> (handle: UInt16, characteristic: GATTCharacteristic?) {
    switch ref {
    case .handle(let h):
        let db = try await p.discover().database
        return (h, db.characteristic(containing: h))
    case .uuid(let u):
        let db = try await p.discover().database
        guard let c = db.characteristic(uuid: u) else {
            throw RuntimeError("the device has no characteristic \(uuidLabel(u))")
        }
        return (c.valueHandle, c)
    }
}

enum ReadCommand {
    static var command: Command {
        Command(
            name: "read", summary: "Read one characteristic or attribute (long values to the end)",
            help: """
            Usage: hcigatt read ADDR HANDLE|UUID [--json] [OPTIONS]

            Reads the value at HANDLE (0x0010 or 16), or of the characteristic with UUID
            (2A19, 0x2a19 or 128-bit; the database is discovered first). Long values are read
            to the end with Read Blob.

            Options:
              --json                 one JSON object
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["json"]), options: PeerOptions.options),
            run: { args in try await run(args) }
        )
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count == 2 else { throw UsageError("expected ADDR and HANDLE|UUID") }
        let target = try DeviceTarget(argument: args.positional[0])
        let ref = try AttributeRef(args.positional[1])
        let settings = try PeerCommandSettings(args)
        let json = args.flag("json")
        try await withPeer(settings, target) { p in
            let (handle, c) = try await resolveCharacteristic(ref, p)
            let value = try await p.client.read(handle: handle)
            if json {
                var f = [Field("handle", .uint(UInt64(handle)))]
                if let c { f.append(Field("uuid", .text(c.uuid.description))) }
                f += ValueFormat.fields(c?.uuid, value)
                Console.out(FieldRenderer.jsonObject(f))
            } else {
                Console.out(ValueFormat.line(c?.uuid, value, full: true))
            }
        }
        return 0
    }
}

enum WriteCommand {
    static var command: Command {
        Command(
            name: "write", summary: "Write one characteristic (request, command or long write)",
            help: """
            Usage: hcigatt write ADDR HANDLE|UUID (HEX | --text S) [--no-response|--signed] [--long] [OPTIONS]

            Writes HEX bytes (or the UTF-8 of --text) with a Write Request and waits for the
            response. Values longer than MTU-3 are written with Prepare/Execute Write (also
            forced by --long). --no-response sends a Write Command (no confirmation).
            --signed sends a Signed Write Command (Core Vol 3 Part G §4.9.2) authenticated
            with the signature key this host gave the bonded device, on a link that stays
            unencrypted (on an encrypted one it is a plain Write Command, as the spec says).

            Options:
              --text S               write the UTF-8 bytes of S instead of HEX
              --no-response          Write Command: no response from the device
              --signed               Signed Write Command (needs a bond; see pair)
              --long                 use Prepare/Execute Write even for a short value
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["no-response", "long", "signed"]), options: PeerOptions.options.union(["text"])),
            run: { args in try await run(args) }
        )
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count >= 2 else { throw UsageError("expected ADDR, HANDLE|UUID and a value") }
        let target = try DeviceTarget(argument: args.positional[0])
        let ref = try AttributeRef(args.positional[1])
        let value: [UInt8]
        if let text = args.option("text") {
            guard args.positional.count == 2 else { throw UsageError("give either HEX or --text, not both") }
            value = Array(text.utf8)
        } else {
            guard args.positional.count > 2 else { throw UsageError("missing the value (HEX or --text S)") }
            switch Hex.parse(args.positional.dropFirst(2).joined(separator: " ")) {
            case .success(let b): value = b
            case .failure(let e): throw UsageError("bad value hex: \(e)")
            }
        }
        if args.flag("no-response") && args.flag("long") { throw UsageError("--no-response and --long exclude each other") }
        if args.flag("signed") && (args.flag("long") || args.flag("no-response")) {
            throw UsageError("--signed is a command of its own: not with --long or --no-response")
        }
        if args.flag("signed"), let t = args.option("transport"), t.hasPrefix("l2cap:") {
            throw UsageError("--signed needs an HCI transport: with \(t) the kernel keeps the keys")
        }
        guard value.count <= 512 else { throw UsageError("an attribute value is at most 512 bytes (Core Vol 3 Part F §3.2.9), not \(value.count)") }
        let settings = try PeerCommandSettings(args)
        let (noResponse, long, signed) = (args.flag("no-response"), args.flag("long"), args.flag("signed"))
        try await withPeer(settings, target) { p in
            let (handle, characteristic) = try await resolveCharacteristic(ref, p)
            if let c = characteristic, c.valueHandle == handle, noResponse || signed {
                // Commands get no answer: one the characteristic does not take would "succeed"
                // and do nothing. (A Write Request is the server's to refuse.)
                let props = c.properties
                let wanted: GATTCharacteristicProperties = noResponse ? .writeWithoutResponse : .authenticatedSignedWrites
                if !props.contains(wanted) {
                    let names = props.names.isEmpty ? "none" : props.names.joined(separator: ", ")
                    let how = noResponse ? "Write Without Response" : "signed writes"
                    throw RuntimeError("\(uuidLabel(c.uuid)) does not take \(how) (its properties: \(names))")
                }
            }
            if signed {
                try await signedWrite(p, handle: handle, value: value)
                return
            } else if noResponse {
                try await p.client.writeWithoutResponse(handle: handle, value: value)
            } else if long {
                try await p.client.reliableWrite([ATTHandleValue(handle: handle, value: value)])
            } else {
                try await p.client.write(handle: handle, value: value)
            }
            Console.err("wrote \(value.count) byte\(value.count == 1 ? "" : "s") to 0x\(Hex.pad(handle, 4))")
        }
        return 0
    }

    /// The library signs (GATTPeer.writeSigned); this says how it went.
    static func signedWrite(_ p: ConnectedPeer, handle: UInt16, value: [UInt8]) async throws {
        let bytes = "\(value.count) byte\(value.count == 1 ? "" : "s")"
        let how: GATTPeer.SignedWrite
        do throws(BluetoothError) { how = try await p.gatt.writeSigned(handle: handle, value: value) } catch {
            throw RuntimeError(error.message, cause: error)
        }
        switch how {
        case .plainOnEncryptedLink:
            Console.err("the link is encrypted: wrote \(bytes) to 0x\(Hex.pad(handle, 4)) as a plain Write Command")
        case .signed(let counter):
            Console.err("wrote \(bytes) to 0x\(Hex.pad(handle, 4)) signed (SignCounter \(counter))")
        }
    }
}

enum SubscribeCommand {
    static var command: Command {
        Command(
            name: "subscribe", summary: "Print notifications/indications of characteristics as they come",
            help: """
            Usage: hcigatt subscribe ADDR UUID... [--count N] [--indicate] [--json] [OPTIONS]

            Enables notifications (or indications with --indicate, or whichever the
            characteristic supports) on each UUID and prints every value with a timestamp
            until Ctrl-C or N values, then disables them again before disconnecting.
            Indications are confirmed only after the value was printed.

            Options:
              --count N              stop after N values in total
              --indicate             ask for indications instead of notifications
              --json                 one JSON object per value (and one "kind":"link" object
                                     with the link's parameters, PHY and data length)
            \(PeerOptions.help)
            """,
            spec: Arguments.Spec(flags: PeerOptions.flags.union(["indicate", "json"]), options: PeerOptions.options.union(["count"])),
            run: { args in try await run(args) }
        )
    }

    static func run(_ args: Arguments) async throws -> Int32 {
        guard args.positional.count >= 2 else { throw UsageError("expected ADDR and at least one UUID") }
        let target = try DeviceTarget(argument: args.positional[0])
        var uuids: [BluetoothUUID] = []
        for text in args.positional.dropFirst() {
            guard let u = BluetoothUUID(text) else { throw UsageError("'\(text)' is not a UUID") }
            uuids.append(u)
        }
        var countLimit: Int?
        if let text = args.option("count") {
            guard let n = Int(text), n > 0 else { throw UsageError("--count takes a positive number, not '\(text)'") }
            countLimit = n
        }
        let limit = countLimit
        let json = args.flag("json"), indicateAlways = args.flag("indicate")
        let p = try await ConnectedPeer.open(try PeerCommandSettings(args), target: target)
        let start = monotonicNow()
        let received = Locked(0)
        var failure: (any Error)?
        do {
            let db = try await p.discover().database
            var streams: [(GATTCharacteristic, AsyncThrowingStream<GATTValue, Error>)] = []
            for u in uuids {
                guard let c = db.characteristic(uuid: u) else { throw RuntimeError("the device has no characteristic \(uuidLabel(u))") }
                let indicate = indicateAlways || !c.properties.contains(.notify)
                streams.append((c, try await p.client.subscribe(characteristic: c, indicate: indicate)))
                Console.err("subscribed to \(uuidLabel(u)) (\(indicate ? "indications" : "notifications"))")
            }
            let all = streams
            if json, let link = p.connection?.parameters {
                // The link as it carries the values (after discovery its data length and
                // PHY have settled); not a value, so --count does not count it.
                Console.out(FieldRenderer.jsonObject([
                    Field("time", .double(Double(monotonicNow() &- start) / 1e9)), Field("kind", .text("link")),
                    Field("link", .object(LinkText.jsonFields(link))),
                ]))
                Console.flush()
            }
            try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (c, stream) in all {
                        group.addTask {
                            for try await v in stream {
                                let n = received.withLock { $0 += 1; return $0 }
                                if let limit, n > limit { return }
                                let t = Double(monotonicNow() &- start) / 1e9
                                if json {
                                    Console.out(FieldRenderer.jsonObject([
                                        Field("time", .double(t)), Field("uuid", .text(c.uuid.description)),
                                        Field("handle", .uint(UInt64(v.handle))),
                                        Field("kind", .text(v.isIndication ? "indication" : "notification")),
                                    ] + ValueFormat.fields(c.uuid, v.value)))
                                } else {
                                    Console.out("\(formatSeconds(t).leftPad(8)) s  \(uuidLabel(c.uuid))  \(ValueFormat.line(c.uuid, v.value))")
                                }
                                Console.flush()
                                if let limit, n >= limit { return }
                            }
                            // Stopped (Ctrl-C, a closed stdout): not a failure; unsubscribing follows.
                            if Task.isCancelled { return }
                            throw RuntimeError("the subscription to \(uuidLabel(c.uuid)) ended: \(p.client.failure.map { describeGATT($0) } ?? "link closed")")
                        }
                    }
                    if limit != nil {
                        // Any stream reaching the count ends them all.
                        try await group.next()
                        group.cancelAll()
                    } else {
                        try await group.waitForAll()
                    }
                }
            }
            // Clear the CCCDs before disconnecting (a clean exit leaves the device quiet).
            for (c, _) in all {
                do { try await p.client.unsubscribe(characteristic: c) } catch {
                    if failure == nil { Console.err("could not unsubscribe from \(uuidLabel(c.uuid)): \(describeGATT(error))") }
                }
            }
        } catch {
            failure = error
        }
        await p.close()
        let n = received.withLock { $0 }
        Console.err("\(min(n, limit ?? n)) value\(n == 1 ? "" : "s") received")
        if let failure { throw RuntimeError(describeGATT(failure)) }
        return 0
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}

extension GATTDiscoverySource {
    /// `gatt --json`'s database_source.
    var jsonName: String {
        switch self {
        case .discovered: "discovered"
        case .cacheConfirmedByHash: "cache-hash-unchanged"
        case .cacheWithoutHash: "cache-no-hash"
        case .rediscovered: "rediscovered"
        }
    }
}
