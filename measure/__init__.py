"""ccgym.measure: what a run measured. Packet logs (simulated and real), the contest's metrics
over them, and a link calibrated to measured runs (`ccgym calibrate`). Every layer above the
emulators reads runs through here."""
