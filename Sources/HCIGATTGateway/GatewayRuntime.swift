import BluetoothTransport
import BluetoothWire
import HCIGATTFormat
import Synchronization

// The gateway's publishing side, on typed settings: what the CLI's `gateway` command (and
// any other program) runs. The radio side hands it readings; it numbers, spools, publishes
// and stops through StopSequence.

/// What the publisher needs to know, checked before anything starts.
public struct GatewaySettings: Sendable {
    /// The broker and how to reach it.
    public var mqtt: MQTTOptions
    /// Topics and the gateway's name.
    public var naming: GatewayNaming
    /// Whether to send Home Assistant discovery configs.
    public var discovery: Bool
    /// The spool's directory.
    public var spoolDirectory: String
    /// The spool's size limit in bytes.
    public var spoolMax: Int
    /// Commands taken from MQTT (``naming``'s ``GatewayNaming/commandFilter``); nil: none.
    public var commands: GatewayCommandMode?
    /// Presence is published (the radio's scan says who is present). Without it, what an
    /// earlier run with it left on the broker is cleared.
    public var presence: Bool

    /// Settings as given.
    public init(mqtt: MQTTOptions, naming: GatewayNaming, discovery: Bool, spoolDirectory: String, spoolMax: Int,
                commands: GatewayCommandMode? = nil, presence: Bool = false) {
        self.presence = presence
        self.mqtt = mqtt
        self.naming = naming
        self.discovery = discovery
        self.spoolDirectory = spoolDirectory
        self.spoolMax = spoolMax
        self.commands = commands
    }
}

/// A command message from the broker, for the radio side to execute.
public struct IncomingCommand: Sendable {
    /// The device level of its topic (12 hex digits, any case, or whatever the sender put).
    public var level: String
    /// The command (JSON, as sent).
    public var payload: [UInt8]
    /// The broker kept it from before (a retained message): never a write.
    public var retained: Bool
}

/// Why the publisher cannot go on (the broker refused the credentials for good).
public struct GatewayError: Error, Sendable, CustomStringConvertible {
    /// What happened.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A reading from the radio, before it gets its number.
public struct PendingReading: Sendable {
    /// The device: its identity address when its private address was resolved.
    public var device: BluetoothAddress
    /// The private address it was heard from, when that is not `device`.
    public var heardAs: BluetoothAddress?
    /// The topic's last level ("bthome", "temperature_measurement").
    public var measurement: String
    /// When it was measured: milliseconds since 1970 (UTC).
    public var milliseconds: Int64
    /// Signal strength it was heard with (broadcast readings).
    public var rssi: Int8?
    /// The decoded values.
    public var fields: [Field]
    /// The device as Home Assistant's discovery describes it.
    public var info: HomeAssistantDevice
    /// The unit the reading states for its main value (connected measurements).
    public var unit: String?
    /// Whether its values get Home Assistant entities (not an advertiser's plain
    /// `advertisement` reading: a crowd of phones would make thousands).
    public var discoverable = true
    /// The stored record it is (fetched through the device's Record Access Control Point):
    /// its place is kept once it is in the spool.
    public var record: RecordMarks.Mark?

    /// A reading as the radio side has it.
    public init(device: BluetoothAddress, heardAs: BluetoothAddress?, measurement: String, milliseconds: Int64, rssi: Int8?,
                fields: [Field], info: HomeAssistantDevice, unit: String?) {
        self.device = device
        self.heardAs = heardAs
        self.measurement = measurement
        self.milliseconds = milliseconds
        self.rssi = rssi
        self.fields = fields
        self.info = info
        self.unit = unit
    }
}

/// The publishing side: numbers readings, spools them, hands them to the MQTT client in
/// order and releases them when acknowledged; announces Home Assistant entities. One task
/// (``run()``) owns all of it; the radio and the client only send it inputs.
public final class GatewayRuntime: @unchecked Sendable {
    enum Input: Sendable {
        case reading(PendingReading)
        case mqtt(MQTTEvent)
        case reply(level: String, payload: String)
        case presence(PresenceUpdate)
        case configs([(topic: String, payload: String)])
        case tick
        case stop
    }

    /// What it was started with.
    public let settings: GatewaySettings
    /// The MQTT client (``MQTTClient/connect()`` starts it).
    public let client: MQTTClient
    /// The spool.
    public let spool: Spool
    let sequences: SequenceStore
    /// Which stored records of each device are published (`<spool>/records`): the radio side
    /// asks the devices for newer ones only.
    public let recordMarks: RecordMarks
    private let log: @Sendable (String) -> Void
    private var window: PublishWindow
    private let inputs: AsyncStream<Input>
    private let input: AsyncStream<Input>.Continuation
    /// Discovery configs sent so far (topic → payload), sent again on every connect and when
    /// Home Assistant comes online.
    private var configs: [String: String] = [:]
    private var configOrder: [String] = []
    /// Each device's presence as published (retained), said again on every connect.
    private var presenceStates: [BluetoothAddress: Bool] = [:]
    /// The present devices changed since the file was written.
    private var presenceDirty = false
    /// The devices the previous run said were present (`<spool>/presence`): the radio side
    /// starts from them, so one that left while the gateway was down is said away.
    public let presentAtStart: [BluetoothAddress]
    /// Devices an earlier run with presence said present or away, cleared from the broker
    /// at the first connection of a run without presence.
    private var presenceToClear: [BluetoothAddress]
    private var published: UInt64 = 0
    /// Readings the broker refused for good (MQTT 5 reason codes of 0x80 and above).
    private var refused: UInt64 = 0
    private var wasConnected = false
    private let failure = Mutex<(any Error)?>(nil)
    private let failed: AsyncStream<Void>.Continuation
    private let failedStream: AsyncStream<Void>
    /// Commands from the broker (with ``GatewaySettings/commands``), for the radio side.
    public let commands: AsyncStream<IncomingCommand>
    private let command: AsyncStream<IncomingCommand>.Continuation

    /// Opens the spool and its sequence store and makes the client (not connected yet);
    /// `log` gets each line for the operator (stderr in the CLI).
    public init(_ settings: GatewaySettings, log: @escaping @Sendable (String) -> Void) throws {
        self.settings = settings
        self.log = log
        spool = try Spool(directory: settings.spoolDirectory, maxBytes: settings.spoolMax)
        sequences = SequenceStore(path: settings.spoolDirectory + "/sequences")
        recordMarks = RecordMarks(path: settings.spoolDirectory + "/records")
        let known = Self.loadPresence(settings.spoolDirectory + "/presence")
        presentAtStart = settings.presence ? known.filter(\.1).map(\.0) : []
        presenceToClear = settings.presence ? [] : known.map(\.0)
        if settings.presence { for (device, present) in known { presenceStates[device] = present } }
        window = PublishWindow(head: spool.head)
        client = try MQTTClient(settings.mqtt)
        (inputs, input) = AsyncStream<Input>.makeStream()
        (failedStream, failed) = AsyncStream<Void>.makeStream()
        // Bounded: a flood of commands is answered "busy" rather than queued without end.
        (commands, command) = AsyncStream<IncomingCommand>.makeStream(bufferingPolicy: .bufferingOldest(256))
    }

    /// A reading from the radio.
    public func submit(_ r: PendingReading) { input.yield(.reading(r)) }
    /// Publishes a command's reply on the device's reply topic (QoS 1, not retained).
    public func reply(level: String, payload: String) { input.yield(.reply(level: level, payload: payload)) }
    /// Offers Home Assistant the controls of a followed device (its discovery configs,
    /// retained, sent again on every connect); nothing without discovery.
    public func controls(_ controls: [GatewayControl], device: BluetoothAddress, name: String?) {
        guard settings.discovery, !controls.isEmpty else { return }
        input.yield(.configs(HomeAssistantDiscovery.controlConfigs(settings.naming, device: device, name: name, controls: controls)))
    }

    /// Publishes a device's presence (retained `present` or `away` on its presence topic).
    public func presence(_ update: PresenceUpdate) { input.yield(.presence(update)) }
    /// Asks for the stop (``StopSequence``); ``run()`` returns when it is done.
    public func stop() { input.yield(.stop) }

    /// Throws the error that stopped publishing (the broker refused the credentials, the
    /// spool failed); waits until then.
    public func waitUntilFailed() async throws {
        for await _ in failedStream {}
        if let e = failure.withLock({ $0 }) { throw e }
        try await Task.sleep(for: .seconds(1_000_000_000))
    }

    private func fail(_ e: any Error) {
        failure.withLock { if $0 == nil { $0 = e } }
        failed.finish()
    }

    /// Runs until ``stop()``: returns the exit code.
    public func run() async -> Int32 {
        let forward = Task { [client, input] in
            for await e in client.events { input.yield(.mqtt(e)) }
        }
        let ticker = Task { [input] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                input.yield(.tick)
            }
        }
        defer {
            ticker.cancel()
            forward.cancel()
        }
        // The stop's steps (StopSequence): "offline", DISCONNECT, then out.
        var stop = StopSequence()
        func perform(_ action: StopSequence.Action?) {
            switch action {
            case .publishOffline?: client.publish(topic: settings.naming.statusTopic, text: "offline", retained: true)
            case .disconnect?: client.disconnect(timeout: 1000)
            case .finish?, nil: break
            }
        }
        for await i in inputs {
            var linkEnded = false
            do {
                switch i {
                case .reading(let r):
                    try accept(r)
                case .mqtt(let e):
                    switch e {
                    case .disconnected, .connectionLost: linkEnded = true
                    default: break
                    }
                    // A DISCONNECT of our own is no news.
                    if case .disconnected = e, stop.isStopping { break }
                    try handle(e)
                case .reply(let level, let payload):
                    publishReply(level, payload)
                case .presence(let update):
                    notePresence(update)
                case .configs(let list):
                    for (topic, payload) in list { noteConfig(topic, payload) }
                case .tick:
                    try spool.sync()
                    try savePresence()
                    _ = window.tick(now: monotonicNow())
                case .stop:
                    perform(stop.stop(now: monotonicNow(), connected: window.connected))
                }
                // Stopping: nothing new is handed over, what is in flight is waited for.
                if !stop.isStopping { try pump() }
            } catch {
                log("hcigatt gateway: \(error)")
                fail(error)
                perform(stop.stop(now: monotonicNow(), connected: window.connected))
            }
            perform(stop.advance(now: monotonicNow(), inFlight: window.inFlightCount, connected: window.connected,
                                 linkEnded: linkEnded))
            if stop.isStopped { break }
        }
        command.finish()
        do {
            try savePresence()
            try spool.sync()
            try sequences.close()
        } catch {
            log("hcigatt gateway: \(error)")
        }
        let waiting = spool.pendingCount
        log("gateway stopped: \(published) reading\(published == 1 ? "" : "s") acknowledged by the broker"
                    + (waiting > 0 ? ", \(waiting) kept in the spool for next time" : "")
                    + (spool.droppedCount > 0 ? ", \(spool.droppedCount) dropped (spool full)" : ""))
        return failure.withLock { $0 } == nil ? 0 : 1
    }

    /// Numbers, spools and (for Home Assistant) describes a reading.
    private func accept(_ r: PendingReading) throws {
        let naming = settings.naming
        let seq = try sequences.take(GatewayNaming.deviceLevel(r.device))
        var reading = GatewayReading(device: r.device, measurement: r.measurement, seq: seq, milliseconds: r.milliseconds,
                                     rssi: r.rssi, fieldsJSON: String(FieldRenderer.jsonObject(r.fields).dropFirst().dropLast()))
        reading.heardAs = r.heardAs
        let payload = reading.payload(naming, theengsFields: naming.style == .theengs ? Self.theengsFields(r.fields) : "")
        let topic = naming.readingTopic(r.device, r.measurement)
        let (_, dropped) = try spool.append(topic: Array(topic.utf8), payload: Array(payload.utf8))
        if dropped > 0 { try noteDropped(dropped) }
        // The record on disk before its mark: a power cut cannot leave a mark past a record
        // that was never written (it may publish one record twice, never lose one).
        if let mark = r.record {
            try spool.sync()
            try recordMarks.published(mark)
        }
        if settings.discovery, r.discoverable { announce(r) }
    }

    /// The spool was full: tell the log and the broker.
    private func noteDropped(_ dropped: UInt64) throws {
        window.dropped(below: spool.head)
        log("spool full (\(settings.spoolMax) bytes): dropped the \(dropped) oldest reading\(dropped == 1 ? "" : "s") (\(spool.droppedCount) in all)")
        publishDropped()
    }

    /// The number of readings dropped since the gateway started (retained: the latest
    /// count is there for whoever looks).
    private func publishDropped() {
        guard spool.droppedCount > 0 || refused > 0, window.connected else { return }
        let payload = "{\"gateway\":\(jsonString(settings.naming.gatewayID)),\"dropped_total\":\(spool.droppedCount)"
            + ",\"refused_total\":\(refused)"
            + ",\"time\":\"\(GatewayClock.iso8601(GatewayClock.nowMilliseconds()))\",\"spool_max\":\(settings.spoolMax)}"
        client.publish(topic: settings.naming.droppedTopic, text: payload, retained: true)
    }

    /// Discovery configs for the reading's values not announced yet.
    private func announce(_ r: PendingReading) {
        let naming = settings.naming
        let stateTopic = naming.anyGatewayTopic(r.device, r.measurement)
        for f in r.fields {
            var isBoolean = false
            switch f.value {
            case .bool: isBoolean = true
            case .int, .uint, .double: break
            default: continue
            }
            guard let entity = HomeAssistantEntity.classify(field: f.name, isBoolean: isBoolean, unit: r.unit) else { continue }
            let (topic, payload) = HomeAssistantDiscovery.config(naming, device: r.info, measurement: r.measurement,
                                                                 stateTopic: stateTopic, entity: entity)
            noteConfig(topic, payload)
        }
    }

    /// A presence change: retained on the device's presence topic, its Home Assistant
    /// device tracker announced once.
    private func notePresence(_ u: PresenceUpdate) {
        let naming = settings.naming
        if presenceStates[u.device] != u.present { presenceDirty = true }
        presenceStates[u.device] = u.present
        // Away devices are said once and forgotten beyond a bound (once said: connected).
        if presenceStates.count > Self.presenceCapacity, window.connected {
            presenceStates = presenceStates.filter { $0.value }
        }
        if window.connected {
            client.publish(topic: naming.presenceTopic(u.device), text: u.present ? "present" : "away", retained: true)
        }
        guard settings.discovery, u.present else { return }
        let (topic, payload) = HomeAssistantDiscovery.presenceConfig(naming, device: u.device, name: u.name)
        noteConfig(topic, payload)
    }

    /// A discovery config: sent when new or changed, kept for every connect.
    private func noteConfig(_ topic: String, _ payload: String) {
        guard configs[topic] != payload else { return }
        if configs[topic] == nil { configOrder.append(topic) }
        configs[topic] = payload
        if window.connected { client.publish(topic: topic, text: payload, retained: true) }
    }

    /// The most devices whose presence is remembered (the present ones are always kept).
    static let presenceCapacity = 16384

    /// Writes each device's presence to `<spool>/presence` (`A4C138123456 present`) when
    /// it changed: the next run starts from the present ones, and a run without presence
    /// clears them all from the broker.
    private func savePresence() throws {
        guard presenceDirty else { return }
        var text = ""
        for (device, present) in presenceStates {
            text += GatewayNaming.deviceLevel(device) + (present ? " present\n" : " away\n")
        }
        try Spool.writeAtomically(Array(text.utf8), to: settings.spoolDirectory + "/presence", in: settings.spoolDirectory)
        presenceDirty = false
    }

    private static func loadPresence(_ path: String) -> [(BluetoothAddress, Bool)] {
        guard let bytes = Spool.readFile(path) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let device = GatewayNaming.device(level: String(parts[0])) else { return nil }
            return (device, parts[1] == "present")
        }
    }

    /// A run without presence after one with it: the retained states and trackers go
    /// (an empty retained message deletes one, and Home Assistant drops the entity).
    private func clearOldPresence() throws {
        guard !presenceToClear.isEmpty else { return }
        for device in presenceToClear {
            client.publish(topic: settings.naming.presenceTopic(device), text: "", retained: true)
            let (topic, _) = HomeAssistantDiscovery.presenceConfig(settings.naming, device: device, name: nil)
            client.publish(topic: topic, text: "", retained: true)
        }
        log("presence is off: cleared what an earlier run said about \(presenceToClear.count) device\(presenceToClear.count == 1 ? "" : "s")")
        presenceToClear = []
        try Spool.writeAtomically([], to: settings.spoolDirectory + "/presence", in: settings.spoolDirectory)
    }

    private func announceAll() {
        for (device, present) in presenceStates {
            client.publish(topic: settings.naming.presenceTopic(device), text: present ? "present" : "away", retained: true)
        }
        guard settings.discovery else { return }
        let (topic, payload) = HomeAssistantDiscovery.gatewayConfig(settings.naming)
        client.publish(topic: topic, text: payload, retained: true)
        for t in configOrder { if let p = configs[t] { client.publish(topic: t, text: p, retained: true) } }
    }

    private func handle(_ e: MQTTEvent) throws {
        switch e {
        case .connected:
            window.connectionUp(now: monotonicNow())
            // Subscribed before "online" is said: the broker takes packets in order, so a
            // sender who waits for "online" knows its commands are heard.
            if settings.commands != nil { client.subscribe(settings.naming.commandFilter) }
            client.publish(topic: settings.naming.statusTopic, text: "online", retained: true)
            publishDropped()
            if settings.discovery { client.subscribe(settings.naming.homeAssistantStatusTopic) }
            announceAll()
            try clearOldPresence()
            log("connected to \(settings.mqtt.uri)" + (wasConnected ? " again" : "")
                        + (spool.pendingCount > 0 ? ": \(spool.pendingCount) reading\(spool.pendingCount == 1 ? "" : "s") to deliver" : ""))
            wasConnected = true
        case .connectFailed(let code, let message):
            let text = mqttConnectFailureText(code, message)
            if mqttConnectFailureIsPermanent(code) {
                throw GatewayError("\(settings.mqtt.uri): \(text)")
            }
            log("\(settings.mqtt.uri): \(text); retrying, readings are kept in the spool")
        case .connectionLost(let cause):
            window.connectionLost()
            log("connection to \(settings.mqtt.uri) lost (\(cause)); reconnecting, readings are kept in the spool")
        case .subscriptionRefused(let filter, let code):
            log("the broker refused the subscription to \(filter) (code 0x\(String(code, radix: 16)))"
                + (filter == settings.naming.commandFilter ? ": commands from MQTT are not heard" : ""))
        case .acknowledged(let tag):
            published += 1
            if let head = window.acknowledged(tag) { spool.release(below: head) }
        case .failed(let tag, let code) where [0x87, 0x90, 0x95, 0x99].contains(code):
            // MQTT 5: the broker refuses this message for good (not authorized, topic name
            // invalid, too large, payload format): sending it again would be refused again
            // and hold back everything after it. Counted with the dropped ones.
            refused += 1
            log("the broker refused reading \(tag) (MQTT 5 reason 0x\(String(code, radix: 16))); it is not sent again (\(refused) refused so far)")
            if let head = window.acknowledged(tag) { spool.release(below: head) }
            publishDropped()
        case .failed(let tag, let code) where code >= 0x80:
            // MQTT 5: refused for now (quota exceeded, server busy ...): again, after a pause.
            window.failed(tag)
            window.hold()
        case .failed(let tag, _):
            window.failed(tag)
        case .message(let topic, let payload, let retained):
            if topic == settings.naming.homeAssistantStatusTopic, payload == Array("online".utf8) {
                announceAll()
            } else if settings.commands != nil, let level = settings.naming.commandDevice(topic) {
                if case .dropped = command.yield(IncomingCommand(level: level, payload: payload, retained: retained)) {
                    let id = (try? GatewayCommand.parse(payload))?.id
                    publishReply(level, CommandReply.failure(id: id, error: "busy: 256 commands wait; send it again later"))
                }
            }
        case .disconnected:
            break
        }
    }

    private func publishReply(_ level: String, _ payload: String) {
        let rc = client.publish(topic: settings.naming.replyTopic(level: level), text: payload)
        if rc != .accepted { log("a command's reply for \(level) was not sent (\(rc)): \(payload)") }
    }

    /// Hands readings to the client while the window has room.
    private func pump() throws {
        var batch: [Spool.Record] = []
        var index = 0
        while let id = window.next(end: spool.nextID) {
            if index >= batch.count || batch[index].id != id {
                batch = try spool.read(from: id, maxCount: 64)
                index = 0
                guard let first = batch.first, first.id == id else {
                    // Dropped meanwhile: the window skips it.
                    window.dropped(below: spool.head)
                    if spool.head <= id { break }
                    continue
                }
            }
            let r = batch[index]
            index += 1
            let rc = r.payload.withUnsafeBytes { p in
                client.publish(topic: String(decoding: r.topic, as: UTF8.self), payload: p, tag: r.id)
            }
            if rc == .accepted {
                window.sent(id, at: monotonicNow())
            } else {
                // Not connected (wait for it); else the session's queue is full (wait for it
                // to move). A bad topic or a reading too large for MQTT cannot be in the spool.
                window.sendRefused(id, disconnected: rc == .notConnected)
                break
            }
        }
    }

    /// Theengs' names for the common values (so its dashboards work): tempc/tempf, hum ...
    public static func theengsFields(_ fields: [Field]) -> String {
        var out = ""
        func number(_ v: FieldValue) -> Double? {
            switch v {
            case .double(let d): d.isFinite ? d : nil
            case .int(let i): Double(i)
            case .uint(let u): Double(u)
            default: nil
            }
        }
        let names = ["temperature": "tempc", "humidity": "hum", "pressure": "pres", "battery": "batt", "voltage": "volt",
                     "illuminance": "lux", "acceleration_x": "accx", "acceleration_y": "accy", "acceleration_z": "accz",
                     "movement_counter": "mov", "moisture": "moi", "co2": "co2", "pm25": "pm25", "pm10": "pm10"]
        for f in fields {
            guard let theengs = names[f.name], let v = number(f.value) else { continue }
            out += ",\"\(theengs)\":\(FieldRenderer.json(.double(v)))"
            if f.name == "temperature" {
                out += ",\"tempf\":\(FieldRenderer.json(.double(((v * 9 / 5 + 32) * 100).rounded() / 100)))"
            }
        }
        return out
    }
}

