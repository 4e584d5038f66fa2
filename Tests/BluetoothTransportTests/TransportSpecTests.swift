import Testing
@testable import BluetoothTransport

@Suite struct TransportSpecTests {
    static let good: [(String, TransportSpec)] = [
        ("user:hci0", .userChannel(index: 0)),
        ("hci0", .userChannel(index: 0)),
        ("hci12", .userChannel(index: 12)),
        ("user:hci65534", .userChannel(index: 65534)),
        ("raw:hci1", .rawChannel(index: 1)),
        ("tcp:127.0.0.1:9001", .tcp(host: "127.0.0.1", port: 9001)),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
        ("tcp:[::1]:65535", .tcp(host: "::1", port: 65535)),
        ("tcp:::1:9000", .tcp(host: "::1", port: 9000)),
        ("tcp:fe80::1%eth0:9000", .tcp(host: "fe80::1%eth0", port: 9000)),
        ("serial:/dev/ttyUSB0", .serial(path: "/dev/ttyUSB0", baudRate: 115_200, flowControl: false)),
        ("serial:/dev/ttyACM1,1000000", .serial(path: "/dev/ttyACM1", baudRate: 1_000_000, flowControl: false)),
        ("serial:/dev/ttyS0,921600,rtscts", .serial(path: "/dev/ttyS0", baudRate: 921_600, flowControl: true)),
    ]

    @Test(arguments: good) func parses(_ text: String, _ expected: TransportSpec) throws {
        let spec = try TransportSpec(parsing: text)
        #expect(spec == expected)
        // The description is canonical and parses back.
        #expect(try TransportSpec(parsing: spec.description) == spec)
    }

    static let bad: [String] = [
        "", "hci", "hcix", "hci-1", "hci65535", "hci0x", "user:", "user:0", "user:hci", "raw:", "usb:hci0",
        "tcp:", "tcp:host", "tcp::9000", "tcp:host:", "tcp:host:0", "tcp:host:65536", "tcp:host:90a",
        "tcp:[]:9000", "tcp:a b:1", "tcp:host:+80", "serial:", "serial:,115200", "serial:/dev/ttyS0,12345",
        "serial:/dev/ttyS0,fast", "serial:/dev/ttyS0,115200,xonxoff", "serial:/dev/ttyS0,115200,rtscts,x",
        "HCI0", "user:hci٣",
    ]

    @Test(arguments: bad) func rejects(_ text: String) {
        do {
            let spec = try TransportSpec(parsing: text)
            Issue.record("\"\(text)\" parsed as \(spec)")
        } catch {
            #expect(error.kind == .invalidSpec)
            #expect(error.message.contains("user:hciN (or hciN), raw:hciN, tcp:HOST:PORT, serial:/dev/ttyX[,BAUD[,rtscts]]"))
            #expect(error.message.contains("\"\(text)\""))
        }
    }

    @Test func badBaudRateListsTheRates() {
        #expect(throws: TransportError.self) { try TransportSpec(parsing: "serial:/dev/ttyS0,12345") }
        do {
            _ = try TransportSpec(parsing: "serial:/dev/ttyS0,12345")
        } catch {
            #expect(error.message.contains("not a standard baud rate"))
            #expect(error.message.contains("921600"))
        }
    }

    @Test func everyStandardRateHasATermiosSpeed() {
        for rate in TransportSpec.standardBaudRates {
            #expect(SerialTransport.speed(rate) != nil, "\(rate)")
        }
        #expect(SerialTransport.speed(12345) == nil)
    }
}
