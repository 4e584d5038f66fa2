import Testing
@testable import BluetoothProfiles
