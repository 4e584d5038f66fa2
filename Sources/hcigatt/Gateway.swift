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
    static let flags: Set<String> = PeerOptions.flags.union(["scan", "passive", "mqtt5", "no-discovery", "no-hostname-check"])
    static let options: Set<String> = PeerOptions.options.union([
        "mqtt", "device", "spool", "spool-max", "gateway-id", "topic-prefix", "topic-style", "bindkey", "ca-file",
        "cert-file", "key-file", "credentials", "discovery-prefix", "config",
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
    readings devices broadcast (BTHome v2, Ruuvi RAWv2, pvvx/ATC1441).

    Each reading is one JSON message on <prefix>/<gateway>/<DEVICE>/<measurement>:
    device, gateway, seq (per device, never repeated across restarts), time (ISO 8601 UTC,
    ms), rssi, measurement, then the decoded fields. QoS 1 on a persistent session; every
    reading is written to the spool when it arrives and removed when the broker has
    acknowledged it, so readings taken while the broker or the network is down, or while
    the gateway restarts, are delivered later, in order. A full spool drops its oldest
    readings and publishes how many on <prefix>/<gateway>/dropped.

    Options:
      --mqtt URI             mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (TLS, 8883)
      --scan                 publish the sensor readings devices broadcast
      --passive              scan without scan requests
      --device ADDR|NAME     follow this device's measurements over a connection (repeatable)
      --bindkey ADDR=KEY     decrypt ADDR's encrypted BTHome readings (32 hex digits; repeatable)
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
        do {
            try runtime.client.connect()
        } catch {
            runtime.stop()
            _ = await publisher.value
            throw RuntimeError("\(error)")
        }
        Console.err("gateway \(settings.naming.gatewayID): publishing to \(settings.mqtt.uri) (spool \(settings.spoolDirectory), \(waiting) readings waiting)")
        var failure: (any Error)?
        do {
            // Only a signal ends this without an error: neither side returns while it can go on.
            _ = try await runInterruptible {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await runtime.waitUntilFailed() }
                    group.addTask {
                        try await radio(args, settings, runtime)
                        throw RuntimeError("the radio side ended without a reason (a bug: please report it)")
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

    /// The radio side: one controller, one scan, and a link per device. The controller
    /// runs one scan at a time, so the scan does both jobs: it publishes broadcast readings
    /// (--scan) and finds the devices given by name or by an address without its type
    /// (``DeviceDirectory``). Without --scan it runs only until every device is found.
    static func radio(_ args: Arguments, _ settings: Settings, _ runtime: GatewayRuntime) async throws {
        let session = try await Session.open(args)
        defer { Task { try? await session.close() } }
        let directory = DeviceDirectory(settings.devices)
        let targets = settings.devices
        for t in directory.missing { Console.err("looking for \(t) while scanning...") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            if settings.scan || !directory.allFound {
                group.addTask {
                    // Ends only with the gateway (or, without --scan, once every device is
                    // found); if the host ends it otherwise, it starts again.
                    while !Task.isCancelled, settings.scan || !directory.allFound {
                        do {
                            try await scanReadings(session, settings, runtime, directory)
                            if Task.isCancelled || (!settings.scan && directory.allFound) { return }
                            Console.err("the scan ended; starting it again")
                        } catch is CancellationError {
                            return
                        } catch {
                            // The controller gone, or deaf: the gateway ends (systemd restarts it).
                            if let reason = session.host.terminationReason { throw reason }
                            if let e = error as? HostError, e.kind == .commandTimeout { throw e }
                            Console.err("the scan failed: \(error); starting it again in 1 s")
                        }
                        try await Task.sleep(for: .seconds(1))
                    }
                }
            }
            let peer = try PeerCommandSettings(args).peer
            for index in targets.indices {
                group.addTask {
                    let found = try await directory.address(of: index)
                    // The library's follower, retrying every ending with the back-off: a
                    // device that is off or refuses never ends the gateway.
                    let follower = DeviceFollower(.address(found), via: .host(session.host), settings: peer,
                                                  plan: .everyMeasurement, reconnection: Reconnection(.always))
                    try await follow(follower, .address(found), settings, runtime)
                }
            }
            // A controller that went away ends the gateway, whatever the tasks are doing.
            group.addTask {
                if let reason = await session.host.terminated() { throw reason }
                throw CancellationError()
            }
            // A task that has done its job (the scan that found every device, without
            // --scan) returns and the others go on: only an error (or cancellation) ends the
            // radio side. Waiting for the first task to end instead stopped a --device-only
            // gateway, exit 0, once its scan had found the devices.
            while try await group.next() != nil {}
        }
    }

    /// Broadcast readings from the scan: a new one when a device's sensor frame changes
    /// (it carries a packet id, counter or sequence number).
    static func scanReadings(_ session: Session, _ settings: Settings, _ runtime: GatewayRuntime,
                             _ directory: DeviceDirectory) async throws {
        var config = ScanConfiguration()
        config.active = !settings.passive
        var last: [BluetoothAddress: Int] = [:]
        var warned: Set<BluetoothAddress> = []
        for try await event in session.host.scan(config) {
            let device = event.device
            if !directory.allFound {
                let noted = directory.note(device, now: monotonicNow())
                sayFound(noted.found, directory)
                if let at = noted.promoteAt {
                    // A name that only contains the one given: taken if no exact match comes.
                    Task {
                        let now = monotonicNow()
                        if at > now { try await Task.sleep(for: .nanoseconds(at - now)) }
                        sayFound(directory.promote(now: monotonicNow()), directory)
                        if !settings.scan, directory.allFound { try? await session.host.stopScan() }
                    }
                }
                if !settings.scan {
                    if directory.allFound { return }
                    continue
                }
            }
            // A bonded device's private address resolves to its identity: readings, numbers
            // and entities follow the identity, whatever address it uses now.
            let heard = device.address.address
            let address = device.identity?.address ?? heard
            let reading: PendingReading? = device.withSummary { a in
                guard let found = ScanFormatter.sensor(a), case .success(let sensor) = found else { return nil }
                let fields = FieldTree.build { sensor.describe(into: &$0, address: heard, keys: settings.keys) }
                // A new reading when the decoded frame changes (its packet id, counter or
                // sequence number does with every measurement); the scan reports a device
                // again for other reasons too (its scan response, another structure).
                var h = Hasher()
                h.combine(FieldRenderer.jsonObject(fields))
                let fingerprint = h.finalize()
                guard last[address] != fingerprint else { return nil }
                // Rotating private addresses would grow it without end.
                if last.count >= 65536 { last.removeAll(keepingCapacity: true) }
                last[address] = fingerprint
                if let error = fields.first(where: { $0.name == "error" }) {
                    if warned.insert(address).inserted {
                        Console.err("\(address): \(FieldRenderer.scalarText(error.value)) (not published)")
                    }
                    return nil
                }
                let format = sensor.format.description
                let name = a.name.map { String(decoding: $0, as: UTF8.self) }
                let (manufacturer, model) = switch format {
                case "bthome": ("BTHome", "BTHome v2 sensor")
                case "ruuvi": ("Ruuvi Innovations", "RuuviTag (data format 5)")
                case "pvvx": ("Xiaomi (pvvx firmware)", "Thermometer (pvvx custom format)")
                default: ("Xiaomi (ATC firmware)", "Thermometer (ATC1441 format)")
                }
                // When the report arrived (not when this loop got to it): the wall clock now,
                // less the report's age on the monotonic clock.
                let mono = monotonicNow()
                let age = mono > device.lastSeen ? Int64(clamping: (mono - device.lastSeen) / 1_000_000) : 0
                return PendingReading(device: address, heardAs: heard == address ? nil : heard, measurement: format,
                                      milliseconds: GatewayClock.nowMilliseconds() - age, rssi: device.rssi, fields: fields,
                                      info: HomeAssistantDevice(address: address, name: name, manufacturer: manufacturer, model: model),
                                      unit: nil)
            }
            if let reading { runtime.submit(reading) }
        }
    }

    /// A followed device's measurements as readings; what happens to its link on stderr.
    static func follow(_ follower: DeviceFollower, _ target: DeviceTarget, _ settings: Settings, _ runtime: GatewayRuntime) async throws {
        var name: String?
        var tag = ""
        do {
            for try await event in follower.events {
                switch event {
                case .read(let c, let value):
                    if c.uuid == BluetoothUUID(0x2A00) { name = ValueFormat.text(value) ?? name }
                    HealthMonitor.tell(event, target, tagged: true, tag: &tag, retrying: "")
                case .value(let c, let v, let device):
                    runtime.submit(connectedReading(c, v, device: device.address, name: name, settings))
                default:
                    HealthMonitor.tell(event, target, tagged: true, tag: &tag, retrying: "")
                }
            }
        } catch {
            await follower.stop()
            throw error
        }
        await follower.stop()
    }

    static func sayFound(_ found: [(index: Int, address: LEAddress)], _ directory: DeviceDirectory) {
        for (i, a) in found {
            let t = directory.targets[i]
            Console.err("found \(t.name.map { "\"\($0)\" at " } ?? "")\(a)")
        }
    }

    /// A measurement of a connected device as a reading.
    static func connectedReading(_ c: GATTCharacteristic, _ v: GATTValue, device: BluetoothAddress, name: String?,
                                 _ settings: Settings) -> PendingReading {
        let now = GatewayClock.nowMilliseconds()
        let label = c.name ?? c.uuid.description
        var fields: [Field] = [Field("uuid", .text(c.uuid.description)), Field("characteristic", .text(label))]
        var unit: String?
        v.value.withUnsafeBytes { buf in
            do throws(WireError) {
                if let d = try CharacteristicDecoder.decode(uuid: c.uuid, value: buf) {
                    let decoded = d.fields
                    fields += decoded
                    if case .text(let u)? = decoded.first(where: { $0.name == "unit" })?.value { unit = u }
                } else {
                    fields.append(Field("value", .text(ValueFormat.line(c.uuid, v.value))))
                }
            } catch {
                fields.append(Field("error", .text(error.description)))
            }
        }
        fields.append(Field("hex", .bytes(v.value)))
        return PendingReading(device: device, heardAs: nil, measurement: measurementName(label), milliseconds: now, rssi: nil,
                              fields: fields,
                              info: HomeAssistantDevice(address: device, name: name, manufacturer: "Bluetooth LE",
                                                        model: label),
                              unit: unit)
    }

    /// "Temperature Measurement" → "temperature_measurement".
    static func measurementName(_ label: String) -> String {
        var out = ""
        for c in label.lowercased().unicodeScalars {
            if ("a" ... "z").contains(c) || ("0" ... "9").contains(c) {
                out.unicodeScalars.append(c)
            } else if !out.isEmpty, !out.hasSuffix("_") {
                out += "_"
            }
        }
        while out.hasSuffix("_") { out.removeLast() }
        return out.isEmpty ? "value" : out
    }

    /// The options, checked before anything starts.
    struct Settings: Sendable {
        var mqtt: MQTTOptions
        var naming: GatewayNaming
        var discovery: Bool
        var scan: Bool
        var passive: Bool
        var devices: [DeviceTarget]
        var keys: SensorKeys?
        var spoolDirectory: String
        var spoolMax: Int

        init(_ args: Arguments) throws {
            guard let uri = args.option("mqtt") else { throw UsageError("missing --mqtt URI (mqtt://HOST[:PORT] or mqtts://HOST[:PORT])") }
            guard uri.hasPrefix("mqtt://") || uri.hasPrefix("mqtts://") || uri.hasPrefix("tcp://") || uri.hasPrefix("ssl://"),
                  uri.split(separator: "/", omittingEmptySubsequences: true).count == 2 else {
                throw UsageError("--mqtt takes mqtt://HOST[:PORT] or mqtts://HOST[:PORT], not '\(uri)'")
            }
            scan = args.flag("scan")
            passive = args.flag("passive")
            devices = try args.all("device").map { try DeviceTarget(argument: $0) }
            guard scan || !devices.isEmpty else {
                throw UsageError("nothing to publish: give --scan (broadcast readings) and/or --device ADDR|NAME")
            }
            keys = try ScanCommand.bindKeys(args)
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
        }

        /// What the publisher takes.
        var publisher: GatewaySettings {
            GatewaySettings(mqtt: mqtt, naming: naming, discovery: discovery, spoolDirectory: spoolDirectory, spoolMax: spoolMax)
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

