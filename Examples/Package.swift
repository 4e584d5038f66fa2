// swift-tools-version:6.0
// The reference CoreBluetooth programs, ported to hcigatt's BluetoothLE library. A package
// of its own with a path dependency on hcigatt, as an outside program would have it:
//   cd Examples && swift build && .build/debug/HealthThermometerClient --transport tcp:127.0.0.1:9001
import PackageDescription

let example = [Target.Dependency.product(name: "BluetoothLE", package: "hcigatt"), "ExampleSupport"]

let package = Package(
    name: "hcigatt-examples",
    dependencies: [.package(name: "hcigatt", path: "..")],
    targets: [
        // Command-line handling the examples share (nothing Bluetooth in it).
        .target(name: "ExampleSupport", dependencies: [.product(name: "BluetoothLE", package: "hcigatt")]),
        .executableTarget(name: "HealthThermometerClient", dependencies: example),
        .executableTarget(name: "SensorTagKeys", dependencies: example),
        .executableTarget(name: "BloodPressureMonitor", dependencies: example),
        .executableTarget(name: "PeerChat", dependencies: example),
        .executableTarget(name: "MagicEightBallCentral", dependencies: example),
        .executableTarget(name: "MagicEightBallPeripheral", dependencies: example),
    ]
)
