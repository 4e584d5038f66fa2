import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothTransport
import BluetoothWire
import HCIGATTFormat
import Synchronization

/// What the gateway's radio side does, parsed and checked before anything starts.
public struct GatewayRadioSettings: Sendable {
    /// Publish the sensor readings devices broadcast.
    public var scan: Bool
    /// Scan with scan requests (a passive scan hears no scan responses).
    public var active: Bool
    /// The devices followed over a connection, each subscribed to every measurement.
    public var devices: [DeviceTarget]
    /// What the scan publishes: filters, presence, rate limit, BTHome keys.
    public var publishing: ScanPublishing
    /// How the followed devices are looked up and connected (timeouts, parameters, bonds).
    public var peer: PeerSettings
    /// Commands from MQTT executed on the followed devices (the runtime's
    /// ``GatewayRuntime/commands``); nil: none.
    public var commands: GatewayCommandMode?
    /// Fetch each followed device's new stored records (Record Access Control Point) on
    /// every connection, kept track of in ``GatewayRuntime/recordMarks``.
    public var records: Bool
    /// What bounds each device's record fetch (all its procedures together): a device that
    /// floods or never answers is given up on at the deadline and followed all the same.
    public var recordLimits: RACPClient.Limits
    /// What a write command may change (``GatewayCommandMode/write``): nothing unless named.
    public var commandWrites: GatewayWriteAllowList

    /// Settings; `scan` or `devices` gives the radio something to publish.
    public init(scan: Bool, active: Bool = true, devices: [DeviceTarget], publishing: ScanPublishing = ScanPublishing(),
                peer: PeerSettings = PeerSettings(), commands: GatewayCommandMode? = nil, records: Bool = false,
                recordLimits: RACPClient.Limits = RACPClient.Limits(), commandWrites: GatewayWriteAllowList = GatewayWriteAllowList()) {
        self.scan = scan
        self.active = active
        self.devices = devices
        self.publishing = publishing
        self.peer = peer
        self.commands = commands
        self.records = records
        self.recordLimits = recordLimits
        self.commandWrites = commandWrites
    }
}

/// The gateway's radio side on one controller: one scan and a link per followed device,
/// feeding a ``GatewayRuntime``. The controller runs one scan at a time, so the scan does
/// both jobs: it publishes broadcast readings (`scan`) and finds the devices given by name
/// or by an address without its type (``DeviceDirectory``).
public struct GatewayRadio: Sendable {
    /// What it does.
    public let settings: GatewayRadioSettings
    private let log: @Sendable (String) -> Void
    private let links = FollowedLinks()

    /// A radio side; `log` gets what happens to the scan and the links, a line at a time.
    public init(_ settings: GatewayRadioSettings, log: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        self.log = log
    }

    /// Runs until cancelled (it then throws `CancellationError`) or until it cannot go on
    /// (the controller gone or deaf): it never returns. A followed device that is off,
    /// refuses or drops the link is retried with the back-off and never ends it.
    public func run(on host: HCIHost, publishingTo runtime: GatewayRuntime) async throws -> Never {
        let directory = DeviceDirectory(settings.devices)
        for t in directory.missing { log("looking for \(t) while scanning...") }
        // Commands for the devices given by address are taken at once; by name, once found.
        for t in settings.devices { if let a = t.address { links.allow(a) } }
        links.lookingUp(settings.devices.count { $0.address == nil })
        let publisher = PublisherBox(ScanPublisher(settings.publishing, presentAtStart: runtime.presentAtStart, now: monotonicNow()),
                                     runtime: runtime, log: log)
        defer { publisher.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            if settings.scan || !directory.allFound {
                group.addTask { try await scanning(host, publisher, directory) }
            }
            for index in settings.devices.indices {
                group.addTask {
                    let found = try await directory.address(of: index)
                    if settings.devices[index].address == nil { links.lookedUp(found.address) }
                    let follower = DeviceFollower(.address(found), via: .host(host), settings: settings.peer,
                                                  plan: plan(for: found.address, runtime), reconnection: Reconnection(.always))
                    try await follow(follower, .address(found), runtime)
                }
            }
            addCommands(to: &group, runtime)
            // A controller that went away ends the gateway, whatever the tasks are doing.
            group.addTask {
                if let reason = await host.terminated() { throw reason }
                throw CancellationError()
            }
            // A task that has done its job (the scan that found every device, without
            // `scan`) returns and the others go on: only an error (or cancellation) ends the
            // radio side. Waiting for the first task to end instead stopped a device-only
            // gateway, exit 0, once its scan had found the devices.
            while try await group.next() != nil {}
        }
        try Task.checkCancellation()
        // Only reachable with no task that runs for good, which the settings rule out.
        throw GatewayError("the radio side had nothing to do")
    }

    /// The devices only, over the kernel's host on adapter `adapter` (`l2cap:hciN`: the
    /// kernel owns the controller, so there is no scan: no broadcast readings and no lookup,
    /// each device given by its address; an untyped one is taken as public). Runs until
    /// cancelled: a device that is off or drops the link is retried with the back-off.
    public func run(overKernelAdapter adapter: UInt16, publishingTo runtime: GatewayRuntime) async throws -> Never {
        if settings.scan { throw GatewayError("scanning needs the controller: over l2cap:hci\(adapter) the kernel owns it") }
        guard !settings.devices.isEmpty else { throw GatewayError("over l2cap:hci\(adapter) give the devices to follow") }
        if let named = settings.devices.first(where: { $0.address == nil }) {
            throw GatewayError("over l2cap:hci\(adapter) give each device by its address, not \(named): finding one needs a scan")
        }
        // A kernel without Bluetooth cannot be waited out; an adapter unplugged can.
        let adapters: [AdapterInfo]
        do throws(TransportError) { adapters = try listAdapters() } catch { throw GatewayError(error.message) }
        if !adapters.contains(where: { $0.index == adapter }) {
            log("hci\(adapter) is not there; its devices are tried with the back-off until it is")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for target in settings.devices {
                if let a = target.address { links.allow(a) }
                group.addTask {
                    let each = target.address.map { plan(for: $0, runtime) } ?? FollowPlan.everyMeasurement
                    let follower = DeviceFollower(target, via: .kernel(adapter: adapter), settings: settings.peer,
                                                  plan: each, reconnection: Reconnection(.always))
                    try await follow(follower, target, runtime)
                }
            }
            addCommands(to: &group, runtime)
            while try await group.next() != nil {}
        }
        try Task.checkCancellation()
        throw GatewayError("the radio side had nothing to do")
    }

    /// The scan, started again if the host ends it; without `scan` it ends once every
    /// device is found.
    private func scanning(_ host: HCIHost, _ publisher: PublisherBox, _ directory: DeviceDirectory) async throws {
        while !Task.isCancelled, settings.scan || !directory.allFound {
            do {
                try await scanReadings(host, publisher, directory)
                if Task.isCancelled || (!settings.scan && directory.allFound) { return }
                log("the scan ended; starting it again")
            } catch is CancellationError {
                return
            } catch {
                // The controller gone, or deaf: the gateway ends (systemd restarts it).
                if let reason = host.terminationReason { throw reason }
                if let e = error as? HostError, e.kind == .commandTimeout { throw e }
                log("the scan failed: \(LinkText.describe(error)); starting it again in 1 s")
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    private func scanReadings(_ host: HCIHost, _ publisher: PublisherBox, _ directory: DeviceDirectory) async throws {
        var config = ScanConfiguration()
        config.active = settings.active
        // Presence needs every report (a beacon that repeats itself is still there), not
        // only the ones whose data changed.
        config.reportDuplicates = settings.scan && settings.publishing.awayAfter != nil
        for try await event in host.scan(config) {
            let device = event.device
            if !directory.allFound {
                let noted = directory.note(device, now: monotonicNow())
                sayFound(noted.found, directory)
                if let at = noted.promoteAt {
                    // A name that only contains the one given: taken if no exact match comes.
                    let scan = settings.scan
                    Task {
                        let now = monotonicNow()
                        if at > now { try await Task.sleep(for: .nanoseconds(at - now)) }
                        sayFound(directory.promote(now: monotonicNow()), directory)
                        if !scan, directory.allFound { try? await host.stopScan() }
                    }
                }
                if !settings.scan {
                    if directory.allFound { return }
                    continue
                }
            }
            publisher.report(device)
        }
    }

    /// Executes the runtime's commands (with ``GatewayRadioSettings/commands``), a few at a
    /// time, replying to each; ends when the runtime stops.
    private func addCommands(to group: inout ThrowingTaskGroup<Void, any Error>, _ runtime: GatewayRuntime) {
        guard let mode = settings.commands else { return }
        let executor = CommandExecutor(mode: mode, writable: settings.commandWrites, links: links)
        group.addTask {
            await withTaskGroup(of: Void.self) { running in
                var count = 0
                for await incoming in runtime.commands {
                    if count >= CommandExecutor.concurrency {
                        await running.next()
                        count -= 1
                    }
                    count += 1
                    running.addTask {
                        if let reply = await executor.execute(incoming) { runtime.reply(level: incoming.level, payload: reply) }
                    }
                }
            }
            // The runtime stopped: wait for the cancellation that follows.
            try await Task.sleep(for: .seconds(1_000_000_000))
        }
    }

    /// What each connection to the device at `address` does: every measurement, and with
    /// ``GatewayRadioSettings/records`` its new stored records first.
    private func plan(for address: BluetoothAddress, _ runtime: GatewayRuntime) -> FollowPlan {
        var plan = FollowPlan.everyMeasurement
        guard settings.records else { return plan }
        let fetch = GatewayRecordFetch(device: address, runtime: runtime, limits: settings.recordLimits, log: log)
        plan.setup = { client, db in await fetch.run(client, db) }
        // Only the record services' own values wait for the fetch (their notifications are
        // the records'); every other measurement is followed from the start.
        plan.waitingForSetup = { db in
            Set(db.services.filter { s in RecordService.allCases.contains { $0.hasControlPoint && $0.uuid == s.uuid } }
                .flatMap { $0.characteristics.map(\.valueHandle) })
        }
        return plan
    }

    /// A followed device's measurements as readings; what happens to its link in the log.
    /// Its link is handed to the commands while it is up.
    private func follow(_ follower: DeviceFollower, _ target: DeviceTarget, _ runtime: GatewayRuntime) async throws {
        var name: String?
        var narrator = FollowNarrator(target: target, tagged: true, retrying: .withBackoff)
        var linked: BluetoothAddress?
        defer { if let linked { links.lost(linked) } }
        do {
            for try await event in follower.events {
                switch event {
                case .connected(let peer, _):
                    // The address the readings are published under (their topic's level).
                    let device = peer.address.address
                    links.allow(device)
                    links.connected(device, peer)
                    linked = device
                    for line in narrator.lines(event) { log(line) }
                case .discovered(let d, _, _):
                    if let linked {
                        links.discovered(linked, d.discovery.database)
                        if settings.commands == .write {
                            // Only the controls whose writes are allowed.
                            let db = d.discovery.database
                            let allowed = GatewayControl.find(in: db).filter { settings.commandWrites.refusal(handle: $0.handle, in: db) == nil }
                            runtime.controls(allowed, device: linked, name: name)
                        }
                    }
                    for line in narrator.lines(event) { log(line) }
                case .retrying:
                    if let linked { links.lost(linked) }
                    for line in narrator.lines(event) { log(line) }
                case .read(let c, let value) where c.uuid == BluetoothUUID(0x2A00):
                    name = ValueFormat.text(value) ?? name
                    for line in narrator.lines(event) { log(line) }
                case .value(let c, let v, let device):
                    runtime.submit(ConnectedReadings.reading(c, v, device: device.address, name: name,
                                                             milliseconds: GatewayClock.nowMilliseconds()))
                default:
                    for line in narrator.lines(event) { log(line) }
                }
            }
        } catch {
            await follower.stop()
            throw error
        }
        await follower.stop()
    }

    private func sayFound(_ found: [(index: Int, address: LEAddress)], _ directory: DeviceDirectory) {
        for (i, a) in found {
            let t = directory.targets[i]
            log("found \(t.name.map { "\"\($0)\" at " } ?? "")\(a)")
        }
    }
}

/// The scan's ``ScanPublisher`` under a lock, with the timer that wakes it at its next
/// deadline (a device gone away, a held reading due): the scan task and the timer both
/// drive it. What it makes is handed to the runtime under the same lock (the runtime only
/// queues it), so a presence change from the timer and one from a report cannot arrive in
/// the other order: an `away` overtaken by the `present` after it would stick.
private final class PublisherBox: Sendable {
    private struct State {
        var publisher: ScanPublisher
        var timer = DeadlineTimer()
        var out: [ScanPublisher.Output] = []
        var stopped = false
    }

    private let state: Mutex<State>
    private let runtime: GatewayRuntime
    private let log: @Sendable (String) -> Void

    init(_ publisher: ScanPublisher, runtime: GatewayRuntime, log: @escaping @Sendable (String) -> Void) {
        var s = State(publisher: publisher)
        s.out.reserveCapacity(8)
        state = Mutex(s)
        self.runtime = runtime
        self.log = log
        state.withLock { arm(&$0) }
    }

    func report(_ device: DiscoveredDevice) {
        state.withLock { s in
            s.publisher.report(device, now: monotonicNow(), wallMilliseconds: GatewayClock.nowMilliseconds(), into: &s.out)
            deliver(&s)
        }
    }

    /// The scan ends: the readings the rate limit holds go out now (the runtime publishes
    /// what it got before its stop), and the timer stops.
    func stop() {
        state.withLock { s in
            s.publisher.flush(into: &s.out)
            deliver(&s)
            s.stopped = true
            s.timer.cancel()
        }
    }

    private func fire() {
        state.withLock { s in
            s.timer.fired()
            s.publisher.expire(now: monotonicNow(), wallMilliseconds: GatewayClock.nowMilliseconds(), into: &s.out)
            deliver(&s)
        }
    }

    /// Hands the outputs over and sets the timer for the next deadline.
    private func deliver(_ s: inout State) {
        for o in s.out {
            switch o {
            case .reading(let r): runtime.submit(r)
            case .presence(let p): runtime.presence(p)
            case .log(let line): log(line)
            }
        }
        s.out.removeAll(keepingCapacity: true)
        arm(&s)
    }

    private func arm(_ s: inout State) {
        let next = s.publisher.nextDeadline
        // No closure made (an allocation) for the usual report that changes no deadline.
        guard !s.stopped, next != s.timer.deadline else { return }
        s.timer.arm(next) { [weak self] in self?.fire() }
    }
}

/// Readings from a connected device's measurements.
public enum ConnectedReadings {
    /// A measurement of `device` (whose Device Name, read on connecting, is `name`) taken at
    /// `milliseconds` (wall clock), decoded where a profile decoder exists.
    public static func reading(_ c: GATTCharacteristic, _ v: GATTValue, device: BluetoothAddress, name: String?,
                               milliseconds: Int64) -> PendingReading {
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
        return PendingReading(device: device, heardAs: nil, measurement: measurementName(label), milliseconds: milliseconds,
                              rssi: nil, fields: fields,
                              info: HomeAssistantDevice(address: device, name: name, manufacturer: "Bluetooth LE", model: label),
                              unit: unit)
    }

    /// "Temperature Measurement" → "temperature_measurement".
    public static func measurementName(_ label: String) -> String {
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
}
