from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0013_merge_revision_packed_chunks"),
    ]

    operations = [
        migrations.AddField(
            model_name="contract",
            name="review_revision",
            field=models.PositiveBigIntegerField(default=0, editable=False),
        ),
    ]
