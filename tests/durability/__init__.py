"""What survives what: crashes, kills, replays of recorded histories, upgrades with turns in flight."""
