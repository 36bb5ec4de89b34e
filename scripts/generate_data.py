"""Write a seeded dataset in the challenge's shape: a JSON array of Country/Indicator/Value/Year.

    python scripts/generate_data.py                      # data/growth-3mb.json, 42,450 records
    python scripts/generate_data.py --records 9 --indent 4 data/sample.json

The same seed and count always give the same bytes. The first series is BRZ/NGDP_R from 2002, whose
first value is 183.26, as in the challenge's own files; every (Country, Indicator, Year) is unique.
"""

import argparse
import itertools
import json
import pathlib
import random

COUNTRIES = (
    "BRZ ALB DZA AGO ATG ARG ARM AUS AUT AZE BHS BHR BGD BRB BLR BEL BLZ BEN BTN BOL BIH BWA BRN BGR "
    "BFA BDI CPV KHM CMR CAN CAF TCD CHL CHN COL COM COD COG CRI CIV HRV CYP CZE DNK DJI DMA DOM ECU "
    "EGY SLV GNQ ERI EST SWZ ETH FJI FIN FRA GAB GMB GEO DEU GHA GRC GRD GTM GIN GNB GUY HTI HND HKG"
).split()
INDICATORS = (
    "NGDP_R NGDP_RPCH NGDP NGDPD NGDP_D NGDPRPC NGDPPC NGDPDPC PPPGDP PPPPC PPPSH PPPEX NID_NGDP "
    "NGSD_NGDP PCPI PCPIPCH PCPIE PCPIEPCH TM_RPCH TMG_RPCH TX_RPCH TXG_RPCH LUR LP GGR GGR_NGDP GGX "
    "GGX_NGDP GGXCNL GGXCNL_NGDP GGSB GGSB_NPGDP GGXONLB GGXONLB_NGDP GGXWDN GGXWDN_NGDP NGDP_FY "
    "GGXWDG GGXWDG_NGDP BCA BCA_NGDPD NGAP_NPGDP FLIBOR6"
).split()
LAST_YEAR = 2020
FIRST_YEARS = range(1980, 2011)
FIRST_SERIES = ("BRZ", "NGDP_R", 2002, 183.26)


def generate(count, seed):
    """The first ``count`` records of the seed's dataset; SystemExit saying how many there are when fewer."""
    records = list(itertools.islice(_every_record(seed), count))
    if len(records) < count:
        raise SystemExit(f"at most {len(records)} records can be generated, asked for {count}")
    return records


def _every_record(seed):
    rng = random.Random(seed)
    series = [(c, i) for c in COUNTRIES for i in INDICATORS if (c, i) != FIRST_SERIES[:2]]
    rng.shuffle(series)
    starts = [(FIRST_SERIES[2], FIRST_SERIES[3])]
    starts += [(rng.choice(FIRST_YEARS), round(rng.uniform(1, 1000), 3)) for _ in series]
    for (country, indicator), (first_year, value) in zip([FIRST_SERIES[:2], *series], starts, strict=True):
        for year in range(first_year, LAST_YEAR + 1):
            yield {"Country": country, "Indicator": indicator, "Value": value, "Year": year}
            value = round(value * rng.uniform(0.95, 1.12), 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", nargs="?", default="data/growth-3mb.json", type=pathlib.Path)
    parser.add_argument("--records", type=int, default=42450)
    parser.add_argument("--seed", type=int, default=2002)
    parser.add_argument("--indent", type=int, default=None,
                        help="pretty-print with this indent (default: one line, like the 3 MB file)")
    args = parser.parse_args()
    records = generate(args.records, args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(records, indent=args.indent))
    print(f"wrote {len(records)} records to {args.output} ({args.output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
