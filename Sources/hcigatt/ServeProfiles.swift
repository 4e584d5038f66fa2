import BluetoothGATT
import BluetoothHost
import BluetoothProfiles
import BluetoothWire
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a running profile can reach: the server, the output, its own options.
struct ProfileContext: Sendable {
    let server: GATTServer
    let out: ServeOutput
    let manual: Bool
    let answers: AnswerSource?
}

/// A ready profile for `hcigatt serve`: its services, what it advertises, a loop that sends
/// changing values, and what it does on a client's write.
struct ServeProfile: Sendable {
    var name: String
    var summary: String
    var services: [GATTLocalService]
    /// Service UUIDs to put in the advertising data.
    var advertised: [BluetoothUUID]
    var run: @Sendable (ProfileContext) async -> Void = { _ in }
    var onEvent: @Sendable (GATTServerEvent, ProfileContext) async -> Void = { _, _ in }

    static let all: [ServeProfile] = [thermometer, bloodPressure, heartRate, glucose, cgm, pulseOximeter, battery, deviceInfo, sensorTagKeys, eightBall]

    static func named(_ name: String) -> ServeProfile? { all.first { $0.name == name } }
}

/// Encodes a profile value (the encoders never fail on values built here).
func encoded(_ v: some WireEncodable) -> [UInt8] { (try? v.encoded()) ?? [] }

/// Wall-clock time for measurement timestamps (UTC).
func nowDateTime() -> DateTime { dateTime(secondsAgo: 0) }

/// The wall-clock time `secondsAgo` (UTC), for readings taken before now.
func dateTime(secondsAgo: Int) -> DateTime {
    var t = time(nil) - secondsAgo
    var tm = Glibc.tm()
    gmtime_r(&t, &tm)
    return DateTime(year: UInt16(tm.tm_year + 1900), month: UInt8(tm.tm_mon + 1), day: UInt8(tm.tm_mday),
                    hours: UInt8(tm.tm_hour), minutes: UInt8(tm.tm_min), seconds: UInt8(tm.tm_sec))
}

/// Sleeps; false when the task was cancelled (serve is stopping).
func pause(_ d: Duration) async -> Bool {
    do { try await Task.sleep(for: d) } catch { return false }
    return true
}

extension ServeProfile {
    // MARK: Health Thermometer (0x1809)

    static let thermometerInterval = Locked<UInt16>(1)

    static var thermometer: ServeProfile {
        let validRange = ValidRange(lower: 1, upper: 60)
        return ServeProfile(
            name: "thermometer", summary: "Health Thermometer: 2A1C indications at the Measurement Interval, 2A1E notifications, writable 2A21 within its Valid Range",
            services: [GATTLocalService(uuid: BluetoothUUID(0x1809), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1C), properties: .indicate),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1D), properties: .read, value: .stored([TemperatureType.body.rawValue])),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1E), properties: .notify),
                GATTLocalCharacteristic(
                    uuid: BluetoothUUID(0x2A21), properties: [.read, .write, .indicate], value: .stored(encoded(MeasurementInterval(seconds: 1))),
                    descriptors: [GATTLocalDescriptor(uuid: BluetoothUUID(0x2906), value: .stored(encoded(validRange)))],
                    maximumLength: 2,
                    onWrite: { _, value in
                        guard value.count == 2 else { return .invalidAttributeValueLength }
                        let seconds = UInt16(value[0]) | UInt16(value[1]) << 8
                        // Health Thermometer Service §3.4.1: outside the Valid Range is Out of Range;
                        // 0 (no periodic measurement) is allowed.
                        guard seconds == 0 || (validRange.lower ... validRange.upper).contains(seconds) else { return .outOfRange }
                        return nil
                    }),
            ])],
            advertised: [BluetoothUUID(0x1809)],
            run: { ctx in
                guard let measurement = ctx.server.valueHandle(of: BluetoothUUID(0x2A1C)),
                      let intermediate = ctx.server.valueHandle(of: BluetoothUUID(0x2A1E)) else { return }
                var step = 0
                var lastMeasurement = ContinuousClock.now
                while await pause(.seconds(1)) {
                    step += 1
                    // A slow wave around 36.6 °C, in 0.1 °C steps.
                    let tenths = 366 + (step % 8 < 4 ? step % 4 : 4 - step % 4) - 2
                    guard let t = try? MedFloat32(mantissa: tenths, exponent: -1) else { continue }
                    await ctx.server.notifyWhenReady(intermediate, value: encoded(TemperatureMeasurement(temperature: t)))
                    let interval = Self.thermometerInterval.withLock { $0 }
                    if interval > 0, ContinuousClock.now - lastMeasurement >= .seconds(Int64(interval)) {
                        lastMeasurement = ContinuousClock.now
                        let value = encoded(TemperatureMeasurement(temperature: t, timestamp: nowDateTime(), temperatureType: .body))
                        Task { _ = await ctx.server.indicateAll(measurement, value: value) }
                    }
                }
            },
            onEvent: { event, ctx in
                if case .wrote(_, let handle, let value, _) = event, handle == ctx.server.valueHandle(of: BluetoothUUID(0x2A21)), value.count == 2 {
                    Self.thermometerInterval.withLock { $0 = UInt16(value[0]) | UInt16(value[1]) << 8 }
                }
            })
    }

    // MARK: Blood Pressure (0x1810)

    /// `serve --profile bloodpressure`: a cuff. A reading every 5 s, indicated to subscribers;
    /// one taken while nobody is subscribed is kept (at most 30), and what is kept is
    /// indicated, oldest first, to the next client that subscribes (or whose bond restores
    /// its subscription), as cuffs hand stored readings to their collector (Blood Pressure
    /// Profile). Three readings from earlier in the day are kept to start with.
    static var bloodPressure: ServeProfile {
        let measurementUUID = BluetoothUUID(0x2A35)
        let cuff = CuffMemory((1 ... 3).compactMap { n in
            bloodPressureReading(n, taken: dateTime(secondsAgo: (13 - 4 * n) * 3600)).map { (n - 3, $0) }
        })
        return ServeProfile(
            name: "bloodpressure", summary: "Blood Pressure cuff: 2A35 indications every 5 s, readings taken while nobody subscribed kept and indicated to the next subscriber, 2A36 cuff pressure notifications, 2A49",
            services: [GATTLocalService(uuid: BluetoothUUID(0x1810), characteristics: [
                GATTLocalCharacteristic(uuid: measurementUUID, properties: .indicate),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A36), properties: .notify),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A49), properties: .read, value: .stored(encoded(BloodPressureFeature(rawValue: 0x0001)))),
            ])],
            advertised: [BluetoothUUID(0x1810)],
            run: { ctx in
                guard let measurement = ctx.server.valueHandle(of: measurementUUID),
                      let pressureHandle = ctx.server.valueHandle(of: BluetoothUUID(0x2A36)) else { return }
                var step = 0
                while await pause(.seconds(1)) {
                    step += 1
                    let pressure = 160 - (step % 5) * 20
                    if let p = try? SFloat(mantissa: pressure, exponent: 0) {
                        await ctx.server.notifyWhenReady(pressureHandle, value: encoded(IntermediateCuffPressure(currentCuffPressure: p)))
                    }
                    guard step % 5 == 0, let value = bloodPressureReading(step, taken: nowDateTime()) else { continue }
                    let server = ctx.server, taken = step
                    Task { await cuff.took(value, order: taken, server: server, handle: measurement) }
                }
            },
            onEvent: { event, ctx in
                guard let h = ctx.server.valueHandle(of: measurementUUID) else { return }
                let client: GATTServerClient
                switch event {
                case .subscriptionChanged(let c, let handle, let configuration) where handle == h && configuration.contains(.indicate):
                    client = c
                case .bondRestored(let c, _, _)
                    where ctx.server.subscribers(of: h).contains(where: { $0.0.id == c.id && $0.1.contains(.indicate) }):
                    client = c
                default:
                    return
                }
                let out = ctx.out, server = ctx.server
                Task {
                    let (sent, left) = await cuff.handOver(to: client.id, server: server, handle: h)
                    guard sent + left > 0 else { return }
                    out.note("bloodpressure: \(sent) stored reading\(sent == 1 ? "" : "s") sent to \(client.peer)"
                             + (left > 0 ? ", \(left) kept (not confirmed)" : ""))
                }
            })
    }

    /// The cuff's reading number `step`, taken at `time`: 118-124 / 76-80 mmHg, pulse 64-72.
    static func bloodPressureReading(_ step: Int, taken time: DateTime) -> [UInt8]? {
        let sys = 118 + step % 7, dia = 76 + step % 5
        guard let s = try? SFloat(mantissa: sys, exponent: 0), let d = try? SFloat(mantissa: dia, exponent: 0),
              let m = try? SFloat(mantissa: (sys + 2 * dia) / 3, exponent: 0),
              let pulse = try? SFloat(mantissa: 64 + step % 9, exponent: 0) else { return nil }
        return encoded(BloodPressureMeasurement(systolic: s, diastolic: d, meanArterialPressure: m, timestamp: time, pulseRate: pulse))
    }

    // MARK: Heart Rate (0x180D)

    static let energyExpended = Locked<UInt16>(0)

    static var heartRate: ServeProfile {
        ServeProfile(
            name: "heartrate", summary: "Heart Rate: 2A37 notifications every second (RR intervals, energy expended), 2A38, 2A39 reset",
            services: [GATTLocalService(uuid: BluetoothUUID(0x180D), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A37), properties: .notify),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A38), properties: .read, value: .stored([0x01])),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A39), properties: .write, maximumLength: 1,
                                        onWrite: { _, value in
                                            // Heart Rate Service §3.3.1: 0x01 resets Energy Expended;
                                            // anything else is Control Point Not Supported (0x80).
                                            value == [0x01] ? nil : .application(0)
                                        }),
            ])],
            advertised: [BluetoothUUID(0x180D)],
            run: { ctx in
                guard let hrm = ctx.server.valueHandle(of: BluetoothUUID(0x2A37)) else { return }
                var step = 0
                while await pause(.seconds(1)) {
                    step += 1
                    let bpm = 64 + (step * 7) % 23
                    let energy = Self.energyExpended.withLock { e -> UInt16 in
                        e = e == 0xFFFF ? e : e + 1
                        return e
                    }
                    let rr = UInt16(60 * 1024 / bpm)
                    // Flags: sensor contact supported + detected, energy expended, RR intervals.
                    let value: [UInt8] = [0x1E, UInt8(bpm), UInt8(energy & 0xFF), UInt8(energy >> 8),
                                          UInt8(rr & 0xFF), UInt8(rr >> 8)]
                    await ctx.server.notifyWhenReady(hrm, value: value)
                }
            },
            onEvent: { event, ctx in
                if case .wrote(_, let handle, let value, _) = event, handle == ctx.server.valueHandle(of: BluetoothUUID(0x2A39)), value == [0x01] {
                    Self.energyExpended.withLock { $0 = 0 }
                }
            })
    }

    // MARK: Battery (0x180F)

    static var battery: ServeProfile {
        ServeProfile(
            name: "battery", summary: "Battery: 2A19 level (read, notify), falling 1 % every 10 s",
            services: [GATTLocalService(uuid: BluetoothUUID(0x180F), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .stored([100])),
            ])],
            advertised: [BluetoothUUID(0x180F)],
            run: { ctx in
                guard let level = ctx.server.valueHandle(of: BluetoothUUID(0x2A19)) else { return }
                var percent = 100
                while await pause(.seconds(10)) {
                    percent = percent > 5 ? percent - 1 : 100
                    await ctx.server.notifyWhenReady(level, value: [UInt8(percent)])
                }
            })
    }

    // MARK: Device Information (0x180A)

    static var deviceInfo: ServeProfile {
        func text(_ uuid: UInt16, _ s: String) -> GATTLocalCharacteristic {
            GATTLocalCharacteristic(uuid: BluetoothUUID(uuid), properties: .read, value: .stored(Array(s.utf8)))
        }
        return ServeProfile(
            name: "device-info", summary: "Device Information: manufacturer, model, serial, revisions, System ID, PnP ID",
            services: [GATTLocalService(uuid: BluetoothUUID(0x180A), characteristics: [
                text(0x2A29, "hcigatt"), text(0x2A24, "hcigatt serve"), text(0x2A25, "0001"),
                text(0x2A27, "virtual"), text(0x2A26, version), text(0x2A28, "hcigatt \(version)"),
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A23), properties: .read,
                                        value: .stored([0x01, 0x02, 0x03, 0x04, 0x05, 0xFE, 0xFF, 0x00])),
                // PnP ID: USB Implementer's Forum vendor source, vendor 0x1D6B, product 0x0246, version 1.0.
                GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A50), properties: .read,
                                        value: .stored([0x02, 0x6B, 0x1D, 0x46, 0x02, 0x00, 0x01])),
            ])],
            advertised: [])
    }

    // MARK: SensorTag keys (FFE0/FFE1)

    static var sensorTagKeys: ServeProfile {
        ServeProfile(
            name: "sensortag-keys", summary: "SensorTag simple keys: FFE1 notifications as the left and right keys are pressed",
            services: [GATTLocalService(uuid: BluetoothUUID(0xFFE0), characteristics: [
                GATTLocalCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: [.read, .notify], value: .stored([0]),
                                        descriptors: [.userDescription("Key Press State")]),
            ])],
            advertised: [BluetoothUUID(0xFFE0)],
            run: { ctx in
                guard let keys = ctx.server.valueHandle(of: BluetoothUUID(0xFFE1)) else { return }
                // Left down, up, right down, up, both down, up.
                let pattern: [UInt8] = [0x02, 0x00, 0x01, 0x00, 0x03, 0x00]
                var i = 0
                while await pause(.milliseconds(700)) {
                    await ctx.server.notifyWhenReady(keys, value: [pattern[i % pattern.count]])
                    i += 1
                }
            })
    }

    // MARK: Magic 8-Ball (128-bit service)

    static let eightBallService = BluetoothUUID("8BA11000-1D7E-4D2E-9F3A-0B8BA1100000")!
    static let eightBallQuestion = BluetoothUUID("8BA11001-1D7E-4D2E-9F3A-0B8BA1100000")!
    static let eightBallAnswer = BluetoothUUID("8BA11002-1D7E-4D2E-9F3A-0B8BA1100000")!

    /// The classic twenty answers.
    static let eightBallAnswers = [
        "It is certain.", "It is decidedly so.", "Without a doubt.", "Yes definitely.", "You may rely on it.",
        "As I see it, yes.", "Most likely.", "Outlook good.", "Yes.", "Signs point to yes.",
        "Reply hazy, try again.", "Ask again later.", "Better not tell you now.", "Cannot predict now.",
        "Concentrate and ask again.", "Don't count on it.", "My reply is no.", "My sources say no.",
        "Outlook not so good.", "Very doubtful.",
    ]

    static var eightBall: ServeProfile {
        ServeProfile(
            name: "8ball", summary: "Magic 8-Ball: write a question (without response) and the answer is notified to the client that asked",
            services: [GATTLocalService(uuid: eightBallService, characteristics: [
                GATTLocalCharacteristic(uuid: eightBallQuestion, properties: .writeWithoutResponse,
                                        descriptors: [.userDescription("Question")]),
                GATTLocalCharacteristic(uuid: eightBallAnswer, properties: .notify,
                                        descriptors: [.userDescription("Answer")]),
            ])],
            advertised: [eightBallService],
            onEvent: { event, ctx in
                guard case .wrote(let client, let handle, let value, _) = event,
                      handle == ctx.server.valueHandle(of: eightBallQuestion),
                      let answerHandle = ctx.server.valueHandle(of: eightBallAnswer) else { return }
                let question = String(decoding: value, as: UTF8.self)
                ctx.out.question(client, question)
                let answer: String
                if let source = ctx.answers {
                    guard let typed = await source.next(for: question) else { return }
                    answer = typed
                } else {
                    answer = eightBallAnswers.randomElement() ?? "Ask again later."
                }
                guard ctx.server.subscribers(of: answerHandle).contains(where: { $0.0.id == client.id }) else {
                    ctx.out.note("\(client.peer) asked without subscribing to the answer; not answered")
                    return
                }
                let result = await ctx.server.notifyWhenReady(answerHandle, value: Array(answer.utf8), to: [client.id])
                if result.sent.isEmpty, let failure = result.failed.first {
                    ctx.out.note("answer to \(client.peer) not sent: \(failure.1)")
                } else {
                    ctx.out.answer(client, answer)
                }
            })
    }
}

/// `--manual`: answers typed on stdin, one line per question, in order.
final class AnswerSource: Sendable {
    private let lines: AsyncStream<String>

    init() { lines = Self.stdinLines() }

    /// The lines of stdin (without the newline, a CR before it dropped), read on a thread
    /// of their own; the stream ends at end of file.
    static func stdinLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            // read(2) on descriptor 0, not readLine: a thread blocked inside stdio would hold
            // the stdin FILE lock, which fflush(NULL) and exit() take.
            let thread = Thread { continuation in
                var pending: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    pending += buffer[0 ..< n]
                    while let nl = pending.firstIndex(of: 0x0A) {
                        var line = Array(pending[..<nl])
                        if line.last == 0x0D { line.removeLast() }
                        continuation.yield(String(decoding: line, as: UTF8.self))
                        pending.removeSubrange(...nl)
                    }
                }
                if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
                continuation.finish()
            }
            thread.start(continuation)
        }
    }

    func next(for question: String) async -> String? {
        Console.errRaw("answer to \"\(question)\": ")
        for await line in lines { return line }
        return nil
    }
}

/// A detached OS thread (stdin reads block; they must not hold up the async executor).
final class Thread: @unchecked Sendable {
    private let body: (AsyncStream<String>.Continuation) -> Void
    init(_ body: @escaping (AsyncStream<String>.Continuation) -> Void) { self.body = body }

    func start(_ continuation: AsyncStream<String>.Continuation) {
        let box = Unmanaged.passRetained(Box(body: body, continuation: continuation)).toOpaque()
        var t = pthread_t()
        if pthread_create(&t, nil, { raw in
            guard let raw else { return nil }
            let b = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            b.body(b.continuation)
            return nil
        }, box) == 0 {
            pthread_detach(t)
        } else {
            Unmanaged<Box>.fromOpaque(box).release()
            continuation.finish()
        }
    }

    final class Box {
        let body: (AsyncStream<String>.Continuation) -> Void
        let continuation: AsyncStream<String>.Continuation
        init(body: @escaping (AsyncStream<String>.Continuation) -> Void, continuation: AsyncStream<String>.Continuation) {
            self.body = body
            self.continuation = continuation
        }
    }
}

/// The readings `serve --profile bloodpressure` took while nobody was subscribed, and their
/// hand-over: one lock over what is kept and whether a hand-over runs, so a reading taken
/// meanwhile waits behind the kept ones (oldest first) and none is kept twice or lost.
final class CuffMemory: Sendable {
    private struct State {
        /// Oldest first, each with the order it was taken in.
        var kept: [(order: Int, value: [UInt8])]
        var handingOver = false

        /// Keeps `value` in the order it was taken (one that went unconfirmed comes back
        /// later than newer ones kept meanwhile); the oldest go beyond the capacity.
        mutating func keep(_ order: Int, _ value: [UInt8]) {
            let at = kept.firstIndex { $0.order > order } ?? kept.endIndex
            kept.insert((order, value), at: at)
            kept = Array(kept.suffix(CuffMemory.capacity))
        }
    }
    private let state: Mutex<State>
    static let capacity = 30

    init(_ kept: [(order: Int, value: [UInt8])]) { state = Mutex(State(kept: kept)) }

    /// A new reading (`order`: when it was taken): to the subscribers when nothing waits and
    /// someone confirms it, otherwise kept.
    func took(_ value: [UInt8], order: Int, server: GATTServer, handle: UInt16) async {
        let now: Bool = state.withLock { s in
            guard !s.handingOver, s.kept.isEmpty,
                  server.subscribers(of: handle).contains(where: { $0.1.contains(.indicate) }) else {
                s.keep(order, value)
                return false
            }
            return true
        }
        guard now else { return }
        if await server.indicateAll(handle, value: value).isEmpty {
            // Nobody confirmed it (the collector left meanwhile): kept for the next.
            state.withLock { $0.keep(order, value) }
        }
    }

    /// Indicates what is kept to `client`, oldest first, one confirmation at a time;
    /// returns how many were sent and how many are kept still (the client went).
    func handOver(to client: ATTServerClientID, server: GATTServer, handle: UInt16) async -> (sent: Int, left: Int) {
        let started: Bool = state.withLock { s in
            guard !s.handingOver, !s.kept.isEmpty else { return false }
            s.handingOver = true
            return true
        }
        guard started else { return (0, 0) }
        var sent = 0
        while true {
            guard let next: (order: Int, value: [UInt8]) = state.withLock({ s in
                guard !s.kept.isEmpty else { s.handingOver = false; return nil }
                return s.kept.removeFirst()
            }) else { return (sent, 0) }
            do throws(GATTServerError) {
                try await server.indicate(handle, value: next.value, to: client, store: false)
                sent += 1
            } catch {
                return state.withLock { s in
                    s.keep(next.order, next.value)
                    s.handingOver = false
                    return (sent, s.kept.count)
                }
            }
        }
    }
}
