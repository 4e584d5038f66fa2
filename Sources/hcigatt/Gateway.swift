import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat
import HCIGATTGateway
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `hcigatt gateway`: decoded readings (connected measurements and broadcast sensors) to an
/// MQTT broker, at least once and in order, through a disk spool; Home Assistant discovery.
enum GatewayCommand {
    // The --device links take what `monitor`'s do (timeouts, connection parameters, bonds).
    static let flags: Set<String> = PeerOptions.flags.union(["scan", "passive", "mqtt5", "no-discovery", "no-hostname-check",
                                                                            "only-sensors", "presence", "records", "commands-insecure"])
    static let options: Set<String> = PeerOptions.options.union([
        "mqtt", "device", "spool", "spool-max", "gateway-id", "topic-prefix", "topic-style", "bindkey", "ca-file",
        "cert-file", "key-file", "credentials", "discovery-prefix", "config", "commands", "allow", "deny",
        "away-timeout", "min-interval", "procedure-timeout", "commands-allow", "pin-sha256",
    ])

    static var command: Command {
        Command(name: "gateway", summary: "Publish decoded readings to an MQTT broker (Home Assistant discovery, disk spool)",
                help: help, spec: Arguments.Spec(flags: flags, options: options), run: { args in try await run(args) })
    }

    static let help = """
    Usage: hcigatt gateway --mqtt URI [--scan] [--device ADDR|NAME]... [OPTIONS]

    Publishes every reading hcigatt decodes to an MQTT broker until stopped (Ctrl-C or
    SIGTERM end it cleanly): the measurements of each --device (connected, subscribed to
    every measurement it has, reconnecting with back-off) and, with --scan, the sensor
    readings devices broadcast (BTHome v2, Ruuvi RAWv2, pvvx/ATC1441, iBeacon, Eddystone)
    and what every other advertiser says (an `advertisement` reading when its data
    changes; --only-sensors leaves those out). With --transport
    l2cap:hciN (bluetoothd keeps the controller) it follows devices given by address over
    the kernel's L2CAP socket, without a scan.

    Each reading is one JSON message on <prefix>/<gateway>/<DEVICE>/<measurement>:
    device, gateway, seq (per device, never repeated across restarts), time (ISO 8601 UTC,
    ms), rssi, measurement, then the decoded fields. QoS 1 on a persistent controller; every
    reading is written to the spool when it arrives and removed when the broker has
    acknowledged it, so readings taken while the broker or the network is down, or while
    the gateway restarts, are delivered later, in order. A full spool drops its oldest
    readings and publishes how many on <prefix>/<gateway>/dropped.

    With --commands, JSON commands on <prefix>/<gateway>/<DEVICE>/command read or write a
    followed device's characteristic: {"id": "1", "op": "read" | "write" |
    "write-without-response", "uuid": "2A19" | "handle": 42, "hex": "0200" | "text": "..",
    "timeout": 30}; the reply goes to <prefix>/<gateway>/<DEVICE>/reply as {"id", "ok",
    "hex", "decoded"} or {"id", "ok": false, "error"}. An id is executed once.

    Options:
      --mqtt URI             mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (TLS, 8883)
      --scan                 publish what devices broadcast (sensors, beacons, advertisers)
      --passive              scan without scan requests
      --only-sensors         publish decoded sensors and beacons only, not every advertiser
      --allow ENTRY          publish only devices matching an --allow entry (repeatable):
                             AA:BB:CC:DD:EE:FF[/public|/random], service:UUID or a bare
                             UUID (FCD2, 0x181A), company:0499 (hex), name:PREFIX or any
                             other text as the start of the advertised name
      --deny ENTRY           never publish devices matching it (wins over --allow)
      --presence             publish each device's presence: retained `present`, then
                             `away` after --away-timeout without hearing it, on
                             <prefix>/<gateway>/<DEVICE>/presence (a Home Assistant
                             device tracker); rssi in readings is the median of the
                             device's last 5 reports
      --away-timeout S       seconds unheard before a device is away (default 120)
      --min-interval S       at most one broadcast reading per device and measurement
                             every S seconds; the latest value wins
      --device ADDR|NAME     follow this device's measurements over a connection (repeatable)
      --records              on each connection to a --device, fetch its stored records
                             newer than those published (a glucose meter's Record Access
                             Control Point; by sequence number, kept in <spool>/records
                             across restarts; a device that numbers anew is fetched whole)
                             and publish each as a reading at its own measurement time,
                             with "stored": true
      --procedure-timeout S  --records: seconds for a device's whole fetch (default 120);
                             a device that floods or never answers is given up on then
                             and its measurements followed all the same
      --bindkey ADDR=KEY     decrypt ADDR's encrypted BTHome readings (32 hex digits; repeatable)
      --commands MODE        take commands from MQTT for the --device devices: read (reads
                             only) or write (reads and writes); off by default. A command
                             never pairs. write needs mqtts:// and --credentials (whoever
                             can publish on the broker writes to the devices)
      --commands-allow UUID  with --commands write: a characteristic (or descriptor) that
                             writes may change (repeatable, or comma-separated); none by
                             default, so a CCCD or a control point (2A52...) is written
                             only when named
      --commands-insecure    --commands write over mqtt:// or without credentials: the
                             broker is trusted (said on stderr)
      --spool DIR            the spool (default /var/lib/hcigatt/spool)
      --spool-max SIZE       the spool's size limit: bytes, or with K or M (default 64M)
      --gateway-id ID        this gateway's name in topics (default: the host name)
      --topic-prefix P       the first topic level (default hcigatt; home with theengs)
      --topic-style S        hcigatt, or theengs: home/<gateway>/BTtoMQTT/<DEVICE>, with
                             Theengs' field names added (tempc, hum, batt ...)
      --no-discovery         no Home Assistant discovery configs
      --discovery-prefix P   Home Assistant's discovery prefix (default homeassistant)
      --mqtt5                MQTT 5 (default 3.1.1)
      --ca-file FILE         TLS: trust these CA certificates (default: the system's)
      --cert-file FILE       TLS: client certificate (PEM)
      --key-file FILE        TLS: the client certificate's key, if not in --cert-file
      --no-hostname-check    TLS: do not check the broker's name against its certificate
                             (only with --ca-file or --pin-sha256). A broker given by its
                             IP address is checked against the certificate's IP names
      --pin-sha256 HEX       TLS: accept only the broker certificate with this SHA-256
                             (of its DER), whoever signed it
      --credentials FILE     user name (first line) and password (second line); else the
                             environment's HCIGATT_MQTT_USERNAME and HCIGATT_MQTT_PASSWORD.
                             Never on the command line, where other users can read them.
      --config FILE          options from FILE, one per line (`name value`, a flag alone,
                             # comments); the command line's win

    For the --device links (as `monitor`; bonds from --bond-dir):
    \(PeerOptions.help)

    Exit codes: 0 stopped, 1 runtime error (no adapter, the broker refused the
    credentials, the spool cannot be written), 2 usage error.
    """

    static func run(_ original: Arguments) async throws -> Int32 {
        let args = try original.option("config").map {
            original.merged(over: try Arguments.configFile($0, spec: Arguments.Spec(flags: flags, options: options)))
        } ?? original
        let settings = try Settings(args)
        let runtime: GatewayRuntime
        do {
            runtime = try GatewayRuntime(settings.publisher, log: { Console.err($0) })
        } catch let e as SpoolError {
            throw RuntimeError("\(e)")
        } catch let e as MQTTError {
            throw RuntimeError("\(e)")
        }
        let waiting = runtime.spool.pendingCount
        let publisher = Task { await runtime.run() }
        runtime.client.connect()
        Console.err("gateway \(settings.naming.gatewayID): publishing to \(settings.mqtt.uri) (spool \(settings.spoolDirectory), \(waiting) readings waiting)")
        if settings.radio.commands == .write, !settings.mqtt.tls || settings.mqtt.username == nil {
            Console.err("warning: --commands-insecure: writes to the devices are taken from anyone who can publish on \(settings.mqtt.host)"
                        + (settings.mqtt.tls ? " (no credentials)" : " (no TLS)"))
        }
        if settings.mqtt.passwordInClear {
            Console.err("warning: the MQTT password goes to \(settings.mqtt.host) in clear text: use an mqtts:// URI")
        }
        var failure: (any Error)?
        do {
            // Only a signal ends this without an error: neither side returns while it can go on.
            _ = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await runtime.waitUntilFailed() }
                    group.addTask {
                        try await radio(settings, runtime)
                    }
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            failure = error
        }
        runtime.stop()
        let code = await publisher.value
        if let failure { throw failure }
        return code
    }

    /// The radio side (the library's ``GatewayRadio``) on the controller, opened once the
    /// publisher runs: it never returns, it is cancelled or fails.
    static func radio(_ settings: Settings, _ runtime: GatewayRuntime) async throws {
        let radio = GatewayRadio(settings.radio, log: { Console.err($0) })
        guard let controllerSettings = settings.controller else {
            guard let adapter = settings.kernelAdapter else { throw RuntimeError("no controller") }
            try await radio.run(overKernelAdapter: adapter, publishingTo: runtime)
        }
        let controller = try await LocalController.open(controllerSettings)
        defer { Task { try? await controller.close() } }
        try await radio.run(on: controller.host, publishingTo: runtime)
    }

    /// The options, checked before anything starts.
    struct Settings: Sendable {
        var mqtt: MQTTOptions
        var naming: GatewayNaming
        var discovery: Bool
        var radio: GatewayRadioSettings
        /// Our controller; nil with `l2cap:hciN`, where the kernel's host keeps it.
        var controller: ControllerSettings?
        var kernelAdapter: UInt16?
        var spoolDirectory: String
        var spoolMax: Int
        var commands: GatewayCommandMode?

        init(_ args: Arguments) throws {
            guard let uri = args.option("mqtt") else { throw UsageError("missing --mqtt URI (mqtt://HOST[:PORT] or mqtts://HOST[:PORT])") }
            guard uri.hasPrefix("mqtt://") || uri.hasPrefix("mqtts://") || uri.hasPrefix("tcp://") || uri.hasPrefix("ssl://"),
                  uri.split(separator: "/", omittingEmptySubsequences: true).count == 2 else {
                throw UsageError("--mqtt takes mqtt://HOST[:PORT] or mqtts://HOST[:PORT], not '\(uri)'")
            }
            let scan = args.flag("scan")
            let devices = try args.all("device").map { try DeviceTarget(argument: $0) }
            guard scan || !devices.isEmpty else {
                throw UsageError("nothing to publish: give --scan (broadcast readings) and/or --device ADDR|NAME")
            }
            // The --device links take what `monitor`'s do. Over l2cap:hciN the kernel keeps
            // the controller: devices by address only, no scan.
            let peer = try PeerCommandSettings(args)
            controller = peer.controller
            kernelAdapter = peer.kernelAdapter
            if let adapter = peer.kernelAdapter {
                if scan {
                    throw UsageError("--scan needs the controller: with l2cap:hci\(adapter) the kernel owns it (give an HCI transport: user:hciN, raw:hciN, tcp:, serial:)")
                }
                if let named = devices.first(where: { $0.address == nil }) {
                    throw UsageError("with l2cap:hci\(adapter) give each --device by its address, not \(named): finding a device needs a scan, which the kernel keeps")
                }
            }
            switch args.option("commands") {
            case nil: commands = nil
            case let text?:
                guard let mode = GatewayCommandMode(rawValue: text) else {
                    throw UsageError("--commands takes read or write, not '\(text)'")
                }
                guard !devices.isEmpty else {
                    throw UsageError("--commands acts on the devices given with --device (the only ones it takes commands for)")
                }
                commands = mode
            }
            var writable = Set<BluetoothUUID>()
            for text in args.all("commands-allow").flatMap({ $0.split(separator: ",").map(String.init) }) {
                guard let u = BluetoothUUID(text) else {
                    throw UsageError("--commands-allow takes a UUID (2A21, or 128-bit), not '\(text)'")
                }
                writable.insert(u)
            }
            if !writable.isEmpty, commands != .write {
                throw UsageError("--commands-allow names what writes may change: it goes with --commands write")
            }
            if args.flag("commands-insecure"), commands != .write {
                throw UsageError("--commands-insecure is about --commands write")
            }
            if args.flag("records"), devices.isEmpty {
                throw UsageError("--records fetches the stored records of the devices given with --device")
            }
            var recordLimits = RACPClient.Limits()
            if let text = args.option("procedure-timeout") {
                guard args.flag("records") else { throw UsageError("--procedure-timeout bounds the --records fetch: give --records too") }
                recordLimits = RACPClient.Limits(procedureTimeout: try RecordsCommand.procedureTimeout(text))
            }
            let publishing = try Self.publishing(args, scan: scan)
            radio = GatewayRadioSettings(scan: scan, active: !args.flag("passive"), devices: devices,
                                         publishing: publishing, peer: peer.peer, commands: commands, records: args.flag("records"),
                                         recordLimits: recordLimits, commandWrites: GatewayWriteAllowList(writable))
            let style: TopicStyle
            switch args.option("topic-style") ?? "hcigatt" {
            case "hcigatt": style = .hcigatt
            case "theengs": style = .theengs
            case let other: throw UsageError("--topic-style is hcigatt or theengs, not '\(other)'")
            }
            let id = args.option("gateway-id") ?? Self.hostname()
            guard !id.isEmpty, !id.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) else {
                throw UsageError("--gateway-id must be a non-empty topic level (no /, + or #), not '\(id)'")
            }
            if let p = args.option("topic-prefix"), p.isEmpty || p.contains(where: { $0 == "+" || $0 == "#" }) {
                throw UsageError("--topic-prefix must be non-empty, without + or #")
            }
            naming = GatewayNaming(gatewayID: id, prefix: args.option("topic-prefix"), style: style)
            if let p = args.option("discovery-prefix") { naming.discoveryPrefix = p }
            discovery = !args.flag("no-discovery")
            spoolDirectory = args.option("spool") ?? "/var/lib/hcigatt/spool"
            spoolMax = try Self.size(args.option("spool-max") ?? "64M")
            mqtt = MQTTOptions(uri: uri, clientID: "hcigatt-\(id)")
            mqtt.version5 = args.flag("mqtt5")
            mqtt.caFile = args.option("ca-file")
            mqtt.certFile = args.option("cert-file")
            mqtt.keyFile = args.option("key-file")
            mqtt.noHostnameCheck = args.flag("no-hostname-check")
            if let text = args.option("pin-sha256") {
                guard let bytes = Hex.pairs(text.utf8.filter { $0 != UInt8(ascii: ":") }), bytes.count == 32 else {
                    throw UsageError("--pin-sha256 takes the SHA-256 of the broker's certificate, 64 hex digits (openssl x509 -in broker.pem -outform DER | sha256sum), not '\(text)'")
                }
                mqtt.pinSHA256 = bytes
            }
            for path in [mqtt.caFile, mqtt.certFile, mqtt.keyFile].compactMap({ $0 }) where access(path, R_OK) != 0 {
                throw UsageError("cannot read \(path)")
            }
            if (mqtt.caFile != nil || mqtt.certFile != nil) && !mqtt.tls {
                throw UsageError("--ca-file and --cert-file are for TLS: use an mqtts:// URI")
            }
            if let path = args.option("credentials") {
                guard let bytes = readWholeFile(path), let text = String(validating: bytes, as: UTF8.self) else {
                    throw UsageError("--credentials: cannot read \(path)")
                }
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
                    String($0.hasSuffix("\r") ? $0.dropLast() : $0)
                }
                guard let user = lines.first, !user.isEmpty else { throw UsageError("--credentials: \(path) has no user name on its first line") }
                mqtt.username = user
                mqtt.password = lines.count > 1 ? lines[1] : nil
            } else if let user = getenv("HCIGATT_MQTT_USERNAME").map({ String(cString: $0) }), !user.isEmpty {
                mqtt.username = user
                mqtt.password = getenv("HCIGATT_MQTT_PASSWORD").map { String(cString: $0) }
            }
            mqtt.will = (naming.statusTopic, "offline", true)
            if commands == .write, !mqtt.tls || mqtt.username == nil, !args.flag("commands-insecure") {
                throw UsageError("--commands write takes writes to the devices from whoever can publish on the broker: it needs an mqtts:// URI and --credentials (or HCIGATT_MQTT_USERNAME), or --commands-insecure to say the broker is trusted")
            }
            // A port that is not a number, an address where TLS needs a name, a client
            // identifier or user name MQTT cannot carry.
            if let problem = mqtt.problem { throw UsageError("--mqtt: \(problem)") }
        }

        /// What the publisher takes.
        var publisher: GatewaySettings {
            GatewaySettings(mqtt: mqtt, naming: naming, discovery: discovery, spoolDirectory: spoolDirectory, spoolMax: spoolMax,
                            commands: commands, presence: radio.publishing.awayAfter != nil)
        }

        /// What the scan publishes (filters, presence, rate limit, keys): only with --scan.
        static func publishing(_ args: Arguments, scan: Bool) throws -> ScanPublishing {
            for option in ["allow", "deny", "away-timeout", "min-interval"] where !scan && args.option(option) != nil {
                throw UsageError("--\(option) is about what --scan publishes: add --scan")
            }
            for flag in ["only-sensors", "presence"] where !scan && args.flag(flag) {
                throw UsageError("--\(flag) is about what --scan publishes: add --scan")
            }
            func entries(_ option: String) throws -> [ScanFilterEntry] {
                try args.all(option).map { text in
                    guard let entry = ScanFilterEntry(text) else {
                        throw UsageError("--\(option) takes an address (AA:BB:CC:DD:EE:FF[/public|/random]), service:UUID, company:ID or name:PREFIX, not '\(text)'")
                    }
                    return entry
                }
            }
            var p = ScanPublishing(filter: ScanFilter(allow: try entries("allow"), deny: try entries("deny")),
                                   onlySensors: args.flag("only-sensors"), keys: try ScanCommand.bindKeys(args))
            if args.flag("presence") {
                let away = try ControllerOptions.seconds(args, "away-timeout", default: 120, range: 5 ... 86400)
                p.awayAfter = nanoseconds(away)
            } else if args.option("away-timeout") != nil {
                throw UsageError("--away-timeout is for --presence: add it")
            }
            if args.option("min-interval") != nil {
                let interval = try ControllerOptions.seconds(args, "min-interval", default: 0, range: 0.1 ... 86400)
                p.minInterval = nanoseconds(interval)
            }
            return p
        }

        private static func nanoseconds(_ d: Duration) -> UInt64 {
            UInt64(d.components.seconds) * 1_000_000_000 + UInt64(d.components.attoseconds / 1_000_000_000)
        }

        static func hostname() -> String {
            var buf = [CChar](repeating: 0, count: 256)
            guard gethostname(&buf, buf.count) == 0 else { return "hcigatt" }
            let name = String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return name.isEmpty ? "hcigatt" : String(name.split(separator: ".").first ?? "hcigatt")
        }

        /// "64M", "512K", "1048576".
        static func size(_ text: String) throws -> Int {
            var digits = Substring(text)
            var scale = 1
            if let last = digits.last?.uppercased() {
                if last == "K" { scale = 1024; digits = digits.dropLast() }
                if last == "M" { scale = 1024 * 1024; digits = digits.dropLast() }
                if last == "G" { scale = 1024 * 1024 * 1024; digits = digits.dropLast() }
            }
            guard let n = Int(digits), n > 0, n <= Int.max / scale, n * scale >= 16 * 1024 else {
                throw UsageError("--spool-max takes a size of at least 16K, like 64M or 512K, not '\(text)'")
            }
            return n * scale
        }
    }
}

