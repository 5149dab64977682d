-- Run once by the postgres image on an empty data volume: one database per service.
CREATE DATABASE mlflow;
CREATE DATABASE prefect;
