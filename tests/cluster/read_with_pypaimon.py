"""Reads tables the cluster wrote on S3 with pypaimon 2.1.0: each must hold the row count and
key sum paimon-sql reports.

    python read_with_pypaimon.py s3://bucket/warehouse table=rows,sum ...

The S3 endpoint and credentials come from the AWS_* variables tests/s3/moto.sh exports.
"""

import os
import sys

import pyarrow.compute as pc
from pypaimon import CatalogFactory


def main() -> int:
    warehouse, expectations = sys.argv[1], sys.argv[2:]
    catalog = CatalogFactory.create(
        {
            "warehouse": warehouse,
            "fs.s3.endpoint": os.environ["AWS_ENDPOINT"],
            "fs.s3.accessKeyId": os.environ["AWS_ACCESS_KEY_ID"],
            "fs.s3.accessKeySecret": os.environ["AWS_SECRET_ACCESS_KEY"],
            "fs.s3.region": os.environ.get("AWS_REGION", "us-east-1"),
        }
    )
    failed = False
    for expectation in expectations:
        name, expected = expectation.split("=")
        rows, total = (int(x) for x in expected.split(","))
        table = catalog.get_table(f"default.{name}")
        builder = table.new_read_builder()
        data = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        got = (data.num_rows, pc.sum(data.column("k")).as_py() or 0)
        status = "ok" if got == (rows, total) else "DIFFERENT"
        failed |= status != "ok"
        print(f"pypaimon {name}: {got[0]} rows, sum(k) {got[1]} (paimon-sql: {rows}, {total}) {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
