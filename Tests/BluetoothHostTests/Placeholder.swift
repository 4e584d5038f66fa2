import Testing
@testable import BluetoothHost
