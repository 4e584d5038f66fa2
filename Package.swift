// swift-tools-version:6.0
// hcigatt: a Bluetooth LE host over raw HCI for Linux.
//
// Layers, one target each, dependencies pointing one way:
//   BluetoothWire (pure codecs) → BluetoothTransport (sockets, H4 streams)
//   → host core → ATT/GATT → profiles → hcigatt (CLI)
import PackageDescription

let package = Package(
    name: "hcigatt",
    products: [
        .executable(name: "hcigatt", targets: ["hcigatt"]),
        // Each layer a program may import, and BluetoothLE: the CoreBluetooth-like roles
        // (CentralManager, Peripheral, PeripheralManager) on top of them.
        .library(name: "BluetoothLE", targets: ["BluetoothLE"]),
        .library(name: "BluetoothWire", targets: ["BluetoothWire"]),
        .library(name: "BluetoothTransport", targets: ["BluetoothTransport"]),
        .library(name: "BluetoothHost", targets: ["BluetoothHost"]),
        .library(name: "BluetoothGATT", targets: ["BluetoothGATT"]),
        .library(name: "BluetoothProfiles", targets: ["BluetoothProfiles"]),
    ],
    targets: [
        // Linux Bluetooth socket structs from libbluetooth-dev headers.
        // Build time only: the module map has no `link` line, so nothing links libbluetooth.so.
        .systemLibrary(
            name: "CBluetooth",
            path: "Sources/CBluetooth",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        // BearSSL (libbearssl-dev), the one cryptographic library, linked statically into the
        // embedded binary: AES-128, AES-CMAC, AES-CCM and P-256 for the host, and the
        // gateway's TLS. Why BearSSL over mbedTLS, the other small candidate Debian ships:
        // - size: a TLS 1.2 client with X.509 and name checks adds 0.11 MB to a static
        //   program (mbedTLS 2.28: 0.66 MB, wolfSSL 1.8 MB, OpenSSL 4.0 MB), what brings the
        //   binary under 9 MiB;
        // - constant-time code by design (AES ct64 or AES-NI, P-256 m31, no secret-indexed
        //   tables), no allocation (the caller owns every buffer, which suits the I/O driver);
        // - TLS 1.2 only, like Debian's mbedTLS 2.28: enough for Mosquitto, EMQX and HiveMQ;
        // - maintenance: no release since 0.6 (2018), fixes in its git only; mbedTLS is the
        //   better maintained. Debian keeps 0.6 patched, and the surface used is small.
        // - what it lacks: CMAC (the RFC 4493 mode is 20 lines in CBearSSL/shim.h), IP-address
        //   names in certificates (a broker reached by IP address needs --no-hostname-check or
        //   a certificate whose DNS name is used), encrypted PEM keys.
        .systemLibrary(
            name: "CBearSSL",
            path: "Sources/CBearSSL",
            providers: [.apt(["libbearssl-dev"])]
        ),
        // OpenSSL's libcrypto as the tests' independent reference for CMAC and CCM; no
        // product target depends on it.
        .systemLibrary(
            name: "COpenSSLReference",
            path: "Sources/COpenSSLReference",
            providers: [.apt(["libssl-dev"])]
        ),
        // Counts heap allocations for the benchmark suite (malloc interposition).
        .target(name: "CAllocCounter", path: "Sources/CAllocCounter"),

        // Pure wire codecs: no I/O, no Foundation.
        .target(name: "BluetoothWire"),
        .target(
            name: "BluetoothTransport",
            dependencies: ["BluetoothWire", "CBluetooth"]
        ),
        // Host core: sans-I/O state machines (command flow, init, scanning) in
        // StateMachines/, and the one I/O driver with the async API in Runtime/.
        // The host's cryptography: AES-128, AES-CMAC, AES-CCM and P-256 on BearSSL, and the
        // Security Manager's toolbox (c1, s1, f4, f5, f6, g2, h6, h7, ah) on them.
        .target(name: "BluetoothCrypto", dependencies: ["CBearSSL"]),
        // The Security Manager (Core Vol 3 Part H): pairing state machine, keys.
        .target(name: "BluetoothSecurity", dependencies: ["BluetoothWire", "BluetoothCrypto"]),
        .target(
            name: "BluetoothHost",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothSecurity"]
        ),
        // ATT client and GATT procedures over any ATT bearer: an LE link of our own host
        // (HCI) or the kernel's L2CAP ATT socket.
        .target(
            name: "BluetoothGATT",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothHost", "BluetoothCrypto", "BluetoothSecurity", "CBluetooth"]
        ),
        // Characteristic value decoders/encoders (GATT Specification Supplement): pure,
        // allocation-free, above GATT.
        // Also the sensor readings broadcast in advertisements (BTHome, Ruuvi, pvvx), whose
        // encrypted BTHome frames need AES-CCM from BluetoothCrypto.
        .target(
            name: "BluetoothProfiles",
            dependencies: ["BluetoothWire", "BluetoothCrypto"]
        ),
        // The facade: central and peripheral roles shaped like CoreBluetooth's.
        .target(
            name: "BluetoothLE",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothSecurity", "BluetoothHost", "BluetoothGATT", "BluetoothProfiles"]
        ),
        // Text and JSON presentation shared by the CLI, the gateway and the benchmarks: scan
        // results, values, and what the application layer's steps say.
        .target(
            name: "HCIGATTFormat",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothSecurity", "BluetoothHost", "BluetoothGATT",
                           "BluetoothProfiles", "BluetoothLE"]
        ),
        // The gateway's parts: the disk spool, reading numbers, the publish window (sans-I/O),
        // Home Assistant discovery, the MQTT client (its own codec and session, TLS on BearSSL), and the publisher (GatewayRuntime)
        // on typed settings, with its stop sequence.
        .target(
            name: "HCIGATTGateway",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothHost", "BluetoothGATT", "BluetoothProfiles", "BluetoothLE",
                           "HCIGATTFormat", "CBearSSL"]
        ),
        // The Home Assistant Bluetooth proxy: the ESPHome native API (its protobuf messages,
        // plaintext and Noise framing, one sans-I/O APISession per client), its TCP server
        // and mDNS responder, over BluetoothLE.
        .target(
            name: "HCIGATTProxy",
            dependencies: ["BluetoothWire", "BluetoothTransport", "BluetoothCrypto", "BluetoothHost", "BluetoothGATT", "BluetoothLE"]
        ),
        .executableTarget(
            name: "hcigatt",
            dependencies: ["BluetoothLE", "BluetoothWire", "BluetoothTransport", "BluetoothHost", "BluetoothGATT", "BluetoothProfiles", "HCIGATTFormat",
                           "HCIGATTGateway", "HCIGATTProxy"]
        ),
        .executableTarget(
            name: "hcigatt-bench",
            dependencies: ["BluetoothWire", "BluetoothSecurity", "BluetoothHost", "BluetoothGATT", "BluetoothProfiles", "HCIGATTFormat",
                           "CAllocCounter", "FakeController"],
            path: "Benchmarks/hcigatt-bench"
        ),
        .testTarget(name: "BluetoothWireTests", dependencies: ["BluetoothWire"]),
        .testTarget(name: "BluetoothTransportTests", dependencies: ["BluetoothTransport"]),
        // A fake controller behind a socketpair, and the packet helpers of the tests that drive
        // a host through it (the host's and the application layer's tests).
        .target(name: "FakeController", dependencies: ["BluetoothHost", "BluetoothTransport", "BluetoothWire"], path: "Tests/FakeController"),
        .testTarget(name: "BluetoothHostTests", dependencies: ["BluetoothHost", "BluetoothTransport", "BluetoothSecurity", "FakeController"]),
        .testTarget(name: "BluetoothProfilesTests", dependencies: ["BluetoothProfiles"]),
        .testTarget(name: "BluetoothGATTTests", dependencies: ["BluetoothGATT", "BluetoothHost", "BluetoothTransport", "BluetoothCrypto", "COpenSSLReference"]),
        .testTarget(name: "BluetoothCryptoTests", dependencies: ["BluetoothCrypto", "CBearSSL", "COpenSSLReference"]),
        .testTarget(name: "BluetoothSecurityTests", dependencies: ["BluetoothSecurity", "BluetoothCrypto", "BluetoothWire"]),
        .testTarget(name: "HCIGATTGatewayTests",
                    dependencies: ["HCIGATTGateway", "HCIGATTFormat", "BluetoothLE", "BluetoothGATT", "BluetoothHost", "BluetoothProfiles", "BluetoothWire"]),
        .testTarget(name: "BluetoothLETests", dependencies: ["BluetoothLE", "BluetoothHost", "BluetoothGATT", "BluetoothSecurity", "BluetoothWire", "FakeController"]),
        .testTarget(name: "HCIGATTProxyTests", dependencies: ["HCIGATTProxy", "BluetoothCrypto", "BluetoothLE", "BluetoothWire"]),
        .testTarget(name: "HCIGATTFormatTests", dependencies: ["HCIGATTFormat", "BluetoothWire", "BluetoothSecurity", "BluetoothHost", "BluetoothGATT", "BluetoothLE", "BluetoothProfiles"]),
    ]
)
