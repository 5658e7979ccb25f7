# Runs carry the agent version that produced their trace; each finished run gets a
# narrow row of compliance analytics (its outcome per obligation, from matching.outcomes),
# filled here from the overlays of the runs read before.
#
# 0017 and 0018 both follow 0016; this migration depends on both, so the graph has one
# leaf again.

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone

from matching.outcomes import obligation_outcomes


def fill_outcomes(apps, schema_editor):
    Run = apps.get_model("audit", "Run")
    RunOutcome = apps.get_model("audit", "RunOutcome")
    done = Run.objects.filter(status="done", overlay__isnull=False)
    fields = ("pk", "contract_id", "created_at", "model_name", "verdict", "overlay")
    batch = []
    for run in done.only(*fields).iterator(chunk_size=500):
        batch.append(
            RunOutcome(
                run_id=run.pk,
                contract_id=run.contract_id,
                day=timezone.localdate(run.created_at),
                model_name=run.model_name,
                is_clean=run.verdict == "clean",
                obligations=obligation_outcomes(run.overlay),
            )
        )
        if len(batch) == 500:
            RunOutcome.objects.bulk_create(batch)
            batch = []
    RunOutcome.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0017_run_automatic_reading"),
        ("audit", "0018_otlp_ingest"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="agent_version",
            field=models.CharField(
                blank=True,
                db_index=True,
                default="",
                help_text="the version of the agent that produced the trace (a release, a commit)",
                max_length=200,
                verbose_name="agent version",
            ),
        ),
        migrations.CreateModel(
            name="RunOutcome",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="outcome",
                        serialize=False,
                        to="audit.run",
                    ),
                ),
                (
                    "day",
                    models.DateField(help_text="the run's creation day (the project's time zone)"),
                ),
                ("agent_version", models.CharField(blank=True, default="", max_length=200)),
                ("model_name", models.CharField(blank=True, default="", max_length=200)),
                ("is_clean", models.BooleanField()),
                (
                    "obligations",
                    models.JSONField(
                        default=dict,
                        help_text="node id -> m (met), o (out of order) or x (missed); absent: not applicable",
                    ),
                ),
                (
                    "contract",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="audit.contract",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["contract", "day"], name="run_outcome_day"),
                    models.Index(
                        fields=["contract", "agent_version", "day"], name="run_outcome_version"
                    ),
                    models.Index(
                        fields=["contract", "model_name", "day"], name="run_outcome_model"
                    ),
                ],
            },
        ),
        migrations.RunPython(fill_outcomes, migrations.RunPython.noop, elidable=True),
    ]
