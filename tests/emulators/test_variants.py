import pytest

from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.variants import Variation, vary_links

CONSTANT = "rate_mbps=12,delay_ms=20,ack_rate_mbps=1"


def test_no_variation_keeps_the_links():
    links = [link_from_spec(CONSTANT)]
    assert vary_links(links, Variation()) == links


def test_each_link_is_crossed_with_every_combination():
    links = [link_from_spec(CONSTANT), link_from_spec("rate_mbps=24,delay_ms=10")]
    varied = vary_links(links, Variation(delay_ms=(5, 50), queue_bdp=(0, 2), ack=("own", "clean")))
    assert len(varied) == 2 * 2 * 2 * 2
    assert len({v.name for v in varied}) == len(varied)
    specs = [_core.parse_link_spec(v.spec) for v in varied]
    assert {s.delay_ms for s in specs} == {5, 50}
    assert {s.rate_mbps for s in specs} == {12, 24}
    # 2 BDPs of 12 Mbit/s over a 100 ms RTT: 2 x 100 packets; of 24 Mbit/s over 10 ms: 2 x 20.
    queues = {(s.rate_mbps, s.delay_ms): s.queue for s in specs if s.queue != "infinite"}
    assert queues[(12, 50)] == "droptail:packets=200"
    assert queues[(24, 5)] == "droptail:packets=40"
    # "clean" drops the ACK direction's own rate; "own" keeps it.
    with_ack = [v for v in varied if "ack_rate_mbps" in v.spec]
    assert len(with_ack) == 4 and all("clean" not in v.name for v in with_ack)


def test_tiny_queues_are_floored():
    [link] = vary_links([link_from_spec("rate_mbps=1,delay_ms=5")], Variation(queue_bdp=(0.5,)))
    assert _core.parse_link_spec(link.spec).queue == "droptail:packets=4"


@pytest.mark.parametrize("variation, key", [
    (dict(delay_ms=(-1,)), "delay_ms"), (dict(queue_bdp=(float("inf"),)), "queue_bdp"),
    (dict(ack=("stalling",)), "ack")])
def test_bad_values_name_their_key(variation, key):
    with pytest.raises(ValueError, match=f"^{key}: "):
        Variation(**variation)
